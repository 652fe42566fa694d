import { GraphQLDeferDirective, GraphQLStreamDirective } from '@graphql-tools/utils';
import { specifiedDirectives } from 'graphql';
import { builder } from './builder.js';
import './scalars.js';
import './validators.js';
import './delegations.js';
import './chain.js';
import './search.js';
import './explorer.js';
import './buyback.js';
import './live.js';
import './nodes.js';

/** The graph, with the incremental-delivery directives (`@defer`, `@stream`) Yoga's defer-stream plugin serves. */
export const schema = builder.toSchema({
  directives: [...specifiedDirectives, GraphQLDeferDirective, GraphQLStreamDirective],
});
