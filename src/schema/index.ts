import { builder } from './builder.js';
import './scalars.js';
import './validators.js';
import './delegations.js';
import './chain.js';
import './search.js';
import './explorer.js';
import './buyback.js';
import './live.js';

export const schema = builder.toSchema();
