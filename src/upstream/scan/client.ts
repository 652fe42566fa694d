import { bool, field, int, list, type Obj, obj, ShapeError, str } from '../decode.js';
import type { CallScope, UpstreamHttp } from '../http.js';
import type {
  Address,
  Block,
  SearchCategory,
  SearchKind,
  SearchResults,
  SubmitTarget,
  Suggestions,
  Transaction,
} from '../models.js';
import { decodeBody } from '../rest.js';

/** The search service: suggestions (4.1) and strict exact search (4.2). */

const CATEGORIES: readonly string[] = ['transactions', 'blocks', 'addresses'];
const KINDS: readonly string[] = ['transaction', 'block', 'address'];

const toTransaction = (value: unknown): Transaction => {
  const t = obj(value, 'transaction suggestion');
  return {
    hash: str(t, 'hash'),
    blockHeight: int(t, 'blockHeight'),
    blockActionIndex: int(t, 'blockActionIndex'),
    blockTime: int(t, 'blockTime'),
    initiator: str(t, 'initiator'),
    type: str(t, 'type'),
  };
};

const toBlock = (value: unknown): Block => {
  const b = obj(value, 'block suggestion');
  return {
    height: int(b, 'height'),
    hash: str(b, 'hash'),
    blockTime: int(b, 'blockTime'),
    transactionCount: int(b, 'transactionCount'),
    actionCountComplete: bool(b, 'actionCountComplete'),
    proposer: str(b, 'proposer'),
  };
};

const toAddress = (value: unknown): Address => ({
  address: str(obj(value, 'address suggestion'), 'address'),
});

function toSubmitTarget(value: unknown): SubmitTarget | null {
  if (value === null || value === undefined) return null;
  const t = obj(value, 'submitTarget');
  const kind = str(t, 'kind');
  if (!KINDS.includes(kind)) throw new ShapeError(`submitTarget.kind ${kind} is unknown`);
  return {
    kind: kind as SearchKind,
    hash: kind === 'transaction' ? str(t, 'hash') : null,
    height: kind === 'block' ? int(t, 'height') : null,
    address: kind === 'address' ? str(t, 'address') : null,
  };
}

function toSuggestions(s: Obj): Suggestions {
  const counts = obj(field(s, 'counts'), 'counts');
  const selected = str(s, 'selectedCategory');
  if (!CATEGORIES.includes(selected)) throw new ShapeError(`selectedCategory ${selected} is unknown`);
  return {
    query: str(s, 'query'),
    transactions: list(field(s, 'transactions'), 'transactions').map(toTransaction),
    blocks: list(field(s, 'blocks'), 'blocks').map(toBlock),
    addresses: list(field(s, 'addresses'), 'addresses').map(toAddress),
    counts: {
      transactions: int(counts, 'transactions'),
      blocks: int(counts, 'blocks'),
      addresses: int(counts, 'addresses'),
    },
    selectedCategory: selected as SearchCategory,
    submitTarget: toSubmitTarget(field(s, 'submitTarget')),
  };
}

function toSearchResults(s: Obj): SearchResults {
  return {
    query: str(s, 'query'),
    results: list(field(s, 'results'), 'results').map((value) => {
      const r = obj(value, 'result');
      const kind = str(r, 'kind');
      if (!KINDS.includes(kind)) throw new ShapeError(`result kind ${kind} is unknown`);
      return {
        kind: kind as SearchKind,
        identity: str(r, 'identity'),
        matched: str(r, 'matched'),
        canonicalUrl: str(r, 'canonicalUrl'),
      };
    }),
  };
}

export interface ScanSettings {
  /** The name of the search text parameter (contract.md: `q`; SCAN_QUERY_PARAM). */
  queryParam: string;
}

export class ScanClient {
  constructor(
    private readonly http: UpstreamHttp,
    private readonly settings: ScanSettings,
  ) {}

  async suggestions(text: string, scope: CallScope = {}): Promise<Suggestions> {
    const { body } = await this.http.get('/api/v1/dex/search', {
      query: { [this.settings.queryParam]: text },
      ...scope,
    });
    return decodeBody('scan', 'suggestions', body, toSuggestions);
  }

  async search(text: string, scope: CallScope = {}): Promise<SearchResults> {
    const { body } = await this.http.get('/api/v1/search', {
      query: { [this.settings.queryParam]: text },
      ...scope,
    });
    return decodeBody('scan', 'search results', body, toSearchResults);
  }
}
