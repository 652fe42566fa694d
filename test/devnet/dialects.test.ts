import { describe, expect, it } from 'vitest';
import { FAILURES, TX_MESSAGE_TYPES, TX_TYPES, type ValidatorRecord } from '../../src/devnet/data.js';
import { type Devnet, startDevnet } from '../../src/devnet/index.js';
import { decodeAddress, encodeBech32 } from '../../src/lib/address.js';
import { allKeys, bearer, call, useDevnet } from './helpers.js';

/**
 * What differs between the dialects on the wire (the shared suites in stake.test.ts and
 * explorer.test.ts prove the behaviour both have). The devnets here share seed and clock, so they
 * hold the same chain and their answers can be compared.
 */

const now = () => Date.UTC(2026, 10, 1, 12);
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3})?Z$/;
const iso = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z');

const get = (devnet: Devnet, service: 'stake' | 'explorer' | 'scan', path: string) =>
  call(`${devnet.urls[service]}${path}`, { headers: service === 'explorer' ? bearer(devnet.token) : {} });
const put = (devnet: Devnet, body: unknown, headers: Record<string, string> = bearer(devnet.token)) =>
  call(`${devnet.urls.stake}/stake/buyback/rounds`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });

/** A delegator with more than `n` delegations (a `0x…` account, as the data holds it). */
const delegatorOf = (devnet: Devnet, n: number): string => {
  for (const [address, list] of devnet.data.delegations) if (list.length > n) return address;
  throw new Error(`no delegator with more than ${n} delegations`);
};
const popularSymbol = (devnet: Devnet) => {
  const counts = new Map<string, number>();
  for (const c of devnet.data.contracts) counts.set(c.symbol, (counts.get(c.symbol) ?? 0) + 1);
  return ([...counts].sort((a, b) => b[1] - a[1])[0] as [string, number])[0];
};

describe('the kratos dialect against the spec one', () => {
  const kratos = useDevnet({ dialect: 'kratos', now });
  const spec = useDevnet({ dialect: 'spec', now });

  it('reports its options with the defaults filled in', () => {
    expect(kratos().dialect).toEqual({
      name: 'kratos',
      stakeEnvelope: false,
      explorerSuccessCode: 0,
      bech32Prefix: 'byb',
    });
    expect(spec().dialect).toEqual({
      name: 'spec',
      stakeEnvelope: false,
      explorerSuccessCode: 0,
      bech32Prefix: 'biya',
    });
  });

  describe('staking wire format', () => {
    it('sends every key in lowerCamelCase, 64-bit integers as strings and 32-bit ones as numbers', async () => {
      const d = kratos();
      const delegator = d.stakeAddress(delegatorOf(d, 3));
      const answers = [
        await get(d, 'stake', '/stake/validators?pageSize=100'),
        await get(d, 'stake', '/stake/validators?page=2&pageSize=100'),
        await get(d, 'stake', `/stake/delegator/delegations?delegatorAddress=${delegator}`),
        await put(d, { round_id: 'round-007', total_slots: 60 }),
      ];
      for (const res of answers) {
        expect(res.status).toBe(200);
        expect(allKeys(res.body).filter((key) => key.includes('_'))).toEqual([]);
      }
      const [first, second] = answers as [any, any];
      expect(first.body.pagination).toEqual({
        page: 1,
        pageSize: 100,
        total: '160',
        totalPages: 2,
        hasPrev: false,
        hasNext: true,
      });
      const s = d.data.statistics;
      expect(first.body.statistics).toEqual({
        totalValidators: s.total_validators,
        consensusValidators: s.consensus_validators,
        activeValidators: s.active_validators,
        totalStakedAmount: s.total_staked_amount,
        rewards24h: s.rewards_24h,
        annualizedRewardRate: s.annualized_reward_rate,
        slashingEvents24h: s.slashing_events_24h,
        timestamp: s.timestamp,
      });

      const byId = new Map(d.data.validators.map((v) => [v.id, v]));
      const validators = [...first.body.validators, ...second.body.validators];
      expect(validators).toHaveLength(160);
      for (const v of validators) {
        const r = byId.get(v.id) as ValidatorRecord;
        expect(v).toEqual({
          id: r.id,
          moniker: r.moniker,
          operatorAddress: d.stakeAddress(r.operator_address),
          consensusAddress: d.stakeAddress(r.consensus_address),
          jailed: r.jailed,
          status: r.status,
          tokens: r.tokens,
          delegatorShares: r.delegator_shares,
          description: r.description,
          unbondingHeight: r.unbonding_height,
          unbondingTime: r.unbonding_time,
          commissionRate: r.commission_rate,
          commissionMaxRate: r.commission_max_rate,
          commissionMaxChangeRate: r.commission_max_change_rate,
          commissionUpdateTime: r.commission_update_time,
          proposed: r.proposed,
          signed: r.signed,
          missed: r.missed,
          timestamp: r.timestamp,
          uptimes: r.uptimes,
          slashingEvents: r.slashing_events,
          uptimePercentage: r.uptime_percentage,
          imageUrl: r.image_url,
          registrationTime: r.registration_time,
          walletAddress: d.stakeAddress(r.wallet_address),
          delegationCount: r.delegation_count,
          outstandingRewards: r.outstanding_rewards,
        });
        for (const int64 of [
          'tokens',
          'unbondingHeight',
          'proposed',
          'signed',
          'missed',
          'delegationCount',
        ]) {
          expect(v[int64]).toMatch(/^\d+$/);
        }
        expect(typeof v.status).toBe('number');
        expect(typeof v.uptimePercentage).toBe('number');
      }

      const list = d.data.delegations.get(delegatorOf(d, 3)) ?? [];
      expect(answers[2]?.body.delegationResponses).toEqual(
        list.slice(0, 20).map(({ delegation, balance }) => ({
          delegation: {
            delegatorAddress: delegator,
            validatorAddress: d.stakeAddress(delegation.validator_address),
            shares: delegation.shares,
          },
          balance: { denom: balance.denom, amount: balance.amount },
        })),
      );
      expect(answers[3]?.body.round).toMatchObject({ roundId: 'round-007', status: 4, totalSlots: 60 });
    });

    it('sends every address as valid bech32 with the deployment prefix, byb by default', async () => {
      const d = kratos();
      const { body } = await get(d, 'stake', '/stake/validators?pageSize=100');
      const records = new Map(d.data.validators.map((v) => [v.id, v]));
      for (const v of body.validators) {
        const wallet = decodeAddress(v.walletAddress);
        expect(wallet).toEqual({ prefix: 'byb', hex: (records.get(v.id)?.wallet_address ?? '').slice(2) });
        expect(decodeAddress(v.operatorAddress)).toEqual({ prefix: 'bybvaloper', hex: wallet?.hex });
        expect(decodeAddress(v.consensusAddress)).toEqual({
          prefix: 'bybvalcons',
          hex: decodeAddress(records.get(v.id)?.consensus_address ?? '')?.hex,
        });
      }
      const delegator = delegatorOf(d, 20);
      const delegations = await get(
        d,
        'stake',
        `/stake/delegator/delegations?delegator_address=${d.stakeAddress(delegator)}&pagination.page_size=100`,
      );
      expect(delegations.body.delegationResponses.length).toBeGreaterThan(20);
      for (const { delegation } of delegations.body.delegationResponses) {
        expect(decodeAddress(delegation.delegatorAddress)).toEqual({
          prefix: 'byb',
          hex: delegator.slice(2),
        });
        expect(decodeAddress(delegation.validatorAddress)?.prefix).toBe('bybvaloper');
      }
    });

    it('takes the delegator by either parameter spelling, as a byb1… account only', async () => {
      const d = kratos();
      const hex = delegatorOf(d, 3).slice(2);
      const account = encodeBech32('byb', hex);
      const snake = await get(d, 'stake', `/stake/delegator/delegations?delegator_address=${account}`);
      const camel = await get(d, 'stake', `/stake/delegator/delegations?delegatorAddress=${account}`);
      expect(snake.status).toBe(200);
      expect(snake.body.delegationResponses.length).toBeGreaterThan(3);
      expect(camel.body).toEqual(snake.body);
      const wrongChecksum = `${account.slice(0, -1)}${account.endsWith('q') ? 'p' : 'q'}`;
      for (const given of [
        `0x${hex}`,
        encodeBech32('biya', hex),
        encodeBech32('bybvaloper', hex),
        wrongChecksum,
        'nobody',
      ]) {
        const res = await get(d, 'stake', `/stake/delegator/delegations?delegatorAddress=${given}`);
        expect(res.status).toBe(400);
        expect(res.body).toEqual({
          code: 400,
          reason: 'BAD_REQUEST',
          message: 'delegator_address must be a byb1… account address',
          metadata: {},
        });
      }
    });

    it('takes either spelling of a pagination parameter; spec knows only its own', async () => {
      const d = kratos();
      const delegator = d.stakeAddress(delegatorOf(d, 20));
      for (const [path, spellings] of [
        [
          '/stake/validators?',
          ['pageSize=7&page=2', 'page_size=7&page=2', 'pagination.pageSize=7&pagination.page=2'],
        ],
        [
          `/stake/delegator/delegations?delegatorAddress=${delegator}&`,
          ['pagination.page_size=7&pagination.page=2', 'pagination.pageSize=7&pagination.page=2'],
        ],
      ] as const) {
        const answers = await Promise.all(spellings.map((q) => get(d, 'stake', `${path}${q}`)));
        for (const a of answers) {
          expect(a.status).toBe(200);
          expect(a.body).toEqual(answers[0]?.body);
          expect(a.body.pagination).toMatchObject({ page: 2, pageSize: 7 });
        }
      }
      const rejected = await get(spec(), 'stake', '/stake/validators?pagination.pageSize=7');
      expect(rejected.status).toBe(400);
      expect(rejected.body).toEqual({ code: 400, message: 'unknown query parameter: pagination.pageSize' });
    });

    it('takes buyback fields in snake_case or camelCase and answers the round in camelCase', async () => {
      const d = kratos();
      const res = await put(d, {
        roundId: 'round-006',
        totalSlots: 150,
        min_amount: '2000000000000000000',
        maxAmount: '900000000000000000000',
        ignoredField: true,
      });
      expect(res.status).toBe(200);
      const r = d.data.rounds.get('round-006');
      expect(r).toMatchObject({ total_slots: 150, max_amount: '900000000000000000000' });
      expect(res.body).toEqual({
        round: {
          id: r?.id,
          roundId: 'round-006',
          startTime: r?.start_time,
          endTime: r?.end_time,
          status: 1,
          totalSlots: 150,
          bookedSlots: 0,
          minAmount: '2000000000000000000',
          maxAmount: '900000000000000000000',
          totalCollected: '0',
          revenuePool: r?.revenue_pool,
          burnTxHash: '',
          createdAt: r?.created_at,
          updatedAt: r?.updated_at,
        },
      });
      for (const time of ['startTime', 'endTime', 'createdAt', 'updatedAt']) {
        expect(res.body.round[time]).toMatch(RFC3339);
      }
      const twice = await put(d, { round_id: 'round-006', roundId: 'round-006' });
      expect(twice.status).toBe(400);
      expect(twice.body).toMatchObject({
        code: 400,
        reason: 'BAD_REQUEST',
        message: 'duplicate field: round_id',
      });
    });

    it('spec rejects camelCase and unknown body fields', async () => {
      for (const [body, field] of [
        [{ roundId: 'round-006' }, 'roundId'],
        [{ round_id: 'round-006', status: 3 }, 'status'],
      ] as const) {
        const res = await put(spec(), body);
        expect(res.status).toBe(400);
        expect(res.body).toEqual({ code: 400, message: `unknown field: ${field}` });
      }
    });
  });

  describe('query parameters', () => {
    const paths = (d: Devnet): [string, 'stake' | 'explorer', string][] => [
      ['validators', 'stake', '/stake/validators?pagination.page_size=5'],
      [
        'delegations',
        'stake',
        `/stake/delegator/delegations?delegator_address=${d.stakeAddress(delegatorOf(d, 3))}`,
      ],
      ['contracts', 'explorer', `/api/v1/contract/info/by-symbol?symbol=${popularSymbol(d)}`],
      ['failed transactions', 'explorer', '/api/v1/transaction/failed-24h?pagination.page_size=5'],
    ];

    it('kratos ignores unknown ones; spec rejects them', async () => {
      for (const [name, service, path] of paths(kratos())) {
        const plain = await get(kratos(), service, path);
        const extra = await get(kratos(), service, `${path}&limit=5&foo=bar`);
        expect(plain.status, name).toBe(200);
        expect(extra.body, name).toEqual(plain.body);
      }
      for (const [name, service, path] of paths(spec())) {
        const res = await get(spec(), service, `${path}&limit=5`);
        expect(res.status, name).toBe(400);
        const message = 'unknown query parameter: limit';
        expect(res.body, name).toEqual(
          service === 'explorer' ? { code: 400, message, data: null } : { code: 400, message },
        );
      }
    });

    it('kratos takes the contract filters and page size in either spelling', async () => {
      const d = kratos();
      const symbol = popularSymbol(d);
      const sample = d.data.contracts.find((c) => c.symbol === symbol && c.contract_type === 'ERC20');
      const base = `/api/v1/contract/info/by-symbol?symbol=${symbol}`;
      const filters = `chainId=${sample?.chain_id}&contractType=erc20&pagination.pageSize=2`;
      const snake = `chain_id=${sample?.chain_id}&contract_type=erc20&pagination.page_size=2`;
      const [a, b] = await Promise.all([
        get(d, 'explorer', `${base}&${filters}`),
        get(d, 'explorer', `${base}&${snake}`),
      ]);
      expect(a.status).toBe(200);
      expect(b.body).toEqual(a.body);
      const expected = d.data.contracts.filter(
        (c) => c.symbol === symbol && c.chain_id === sample?.chain_id && c.contract_type === 'ERC20',
      );
      expect(a.body.data.data.map((c: any) => c.contractAddress)).toEqual(
        expected.slice(0, 2).map((c) => c.address),
      );
      expect(a.body.data.pagination).toMatchObject({ pageSize: 2, total: String(expected.length) });
    });
  });

  describe('errors', () => {
    it('answers every failure with HTTP status = code and { code, reason, message, metadata }', async () => {
      const d = kratos();
      const cases: [number, string, () => Promise<{ status: number; body: any; headers: Headers }>][] = [
        [400, 'BAD_REQUEST', () => get(d, 'stake', '/stake/validators?page=0')],
        [400, 'BAD_REQUEST', () => get(d, 'explorer', '/api/v1/contract/info/by-symbol')],
        [401, 'UNAUTHORIZED', () => call(`${d.urls.explorer}/api/v1/transaction/failed-24h`)],
        [401, 'UNAUTHORIZED', () => put(d, { round_id: 'round-006' }, {})],
        [404, 'NOT_FOUND', () => get(d, 'stake', '/stake/nope')],
        [404, 'NOT_FOUND', () => get(d, 'explorer', '/api/v1/nope')],
        [404, 'ROUND_NOT_FOUND', () => put(d, { round_id: 'round-999' })],
        [405, 'METHOD_NOT_ALLOWED', () => get(d, 'stake', '/stake/buyback/rounds')],
        [409, 'CONFLICT', () => put(d, { round_id: 'round-001', total_slots: 1 })],
        [413, 'PAYLOAD_TOO_LARGE', () => put(d, { round_id: 'x'.repeat(70_000) })],
        [
          415,
          'UNSUPPORTED_MEDIA_TYPE',
          () =>
            call(`${d.urls.stake}/stake/buyback/rounds`, {
              method: 'PUT',
              headers: { 'content-type': 'text/plain', ...bearer(d.token) },
              body: '{}',
            }),
        ],
      ];
      for (const [status, reason, send] of cases) {
        const res = await send();
        expect(res.status, reason).toBe(status);
        expect(res.body, reason).toEqual({ code: status, reason, message: expect.any(String), metadata: {} });
        if (status === 401) expect(res.headers.get('www-authenticate')).toBe('Bearer');
      }
    });

    it('leaves the search service’s { error } as it is', async () => {
      const res = await get(kratos(), 'scan', '/api/v1/search?q=1&x=2');
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: 'unknown query parameter: x' });
    });
  });

  describe('explorer wire format', () => {
    it('answers contracts in data.data with explorer.yaml’s names and a cursor to the next page', async () => {
      const d = kratos();
      const symbol = popularSymbol(d);
      const all = d.data.contracts.filter((c) => c.symbol === symbol);
      const path = `/api/v1/contract/info/by-symbol?symbol=${symbol}&pagination.pageSize=5`;
      const first = await get(d, 'explorer', path);
      expect(first.body).toEqual({
        code: 0,
        message: 'success',
        data: {
          data: all.slice(0, 5).map((c) => ({
            contractAddress: c.address,
            name: c.name,
            tokenName: c.name,
            tokenSymbol: c.symbol,
            contractType: c.contract_type,
            chainId: c.chain_id,
            verificationStatus: c.verified ? 'verified' : 'unverified',
            metadata: {
              decimals: String(c.decimals),
              totalSupply: c.total_supply,
              holders: String(c.holders),
              deployer: d.explorerAddress(c.deployer),
              creationTxHash: c.creation_tx_hash,
            },
            tags: [c.contract_type.toLowerCase()],
            createdAt: c.created_at,
            updatedAt: c.created_at,
          })),
          pagination: {
            page: 1,
            pageSize: 5,
            total: String(all.length),
            totalPages: Math.ceil(all.length / 5),
            hasPrev: false,
            hasNext: true,
            cursor: all[4]?.address,
          },
        },
      });
      const next = await get(d, 'explorer', `${path}&pagination.cursor=${first.body.data.pagination.cursor}`);
      const second = await get(d, 'explorer', `${path}&pagination.page=2`);
      expect(next.body).toEqual(second.body);
      const last = await get(d, 'explorer', `${path}&pagination.page=${Math.ceil(all.length / 5)}`);
      expect(last.body.data.pagination).toMatchObject({ hasNext: false, cursor: '' });
    });

    it('answers failed transactions as TransactionDTOs, block_unix_timestamp as numbers and as strings', async () => {
      const d = kratos();
      const { txs, blocks, addresses } = d.data;
      const path = '/api/v1/transaction/failed-24h?pagination.pageSize=100';
      const { body } = await get(d, 'explorer', path);
      const items: any[] = body.data.data;
      expect(items).toHaveLength(100);
      for (const tx of items) {
        const i = Number(tx.tx_number) - 1;
        const failure = FAILURES[(txs.failure[i] as number) - 1];
        const type = TX_TYPES[txs.type[i] as number] as (typeof TX_TYPES)[number];
        const ms = (blocks.time[(txs.height[i] as number) - 1] as number) * 1000;
        expect(tx).toEqual({
          id: String(i + 1),
          hash: txs.hash[i],
          block_number: String(txs.height[i]),
          block_timestamp: iso(ms),
          block_unix_timestamp: (i + 1) % 2 === 0 ? ms : String(ms),
          tx_number: String(i + 1),
          code: failure?.code,
          codespace: failure?.codespace,
          gas_wanted: expect.stringMatching(/^\d+$/),
          gas_used: expect.stringMatching(/^\d+$/),
          gas_fee: expect.stringMatching(/^\d+$/),
          tx_type: type,
          messages: JSON.stringify([{ '@type': TX_MESSAGE_TYPES[type] }]),
          memo: '',
          error_log: failure?.reason,
          signer: d.explorerAddress(addresses[txs.initiator[i] as number] as string),
          to: type === 'transfer' ? expect.stringMatching(/^byb1/) : '',
          value: type === 'transfer' ? expect.stringMatching(/^[1-9]\d*$/) : '0',
        });
        expect(tx.code).not.toBe(0);
        expect(BigInt(tx.gas_used) <= BigInt(tx.gas_wanted)).toBe(true);
        expect(decodeAddress(tx.signer)).toEqual({
          prefix: 'byb',
          hex: (addresses[txs.initiator[i] as number] as string).slice(2),
        });
      }
      expect(new Set(items.map((tx) => typeof tx.block_unix_timestamp))).toEqual(
        new Set(['number', 'string']),
      );
      expect(body.data.pagination).toMatchObject({ page: 1, pageSize: 100, hasNext: true });
      expect(body.data.pagination.cursor).toBe(items[99].tx_number);
      const next = await get(d, 'explorer', `${path}&pagination.cursor=${body.data.pagination.cursor}`);
      const second = await get(d, 'explorer', `${path}&pagination.page=2`);
      expect(next.body.data.data).toEqual(second.body.data.data);
    });
  });

  it('keeps the search service the same, block proposers as canonical biyavalcons1… addresses', async () => {
    const [k, s] = await Promise.all([
      get(kratos(), 'scan', '/api/v1/dex/search?q=12'),
      get(spec(), 'scan', '/api/v1/dex/search?q=12'),
    ]);
    expect(k.body).toEqual(s.body);
    const { data } = kratos();
    const validator = data.validators[data.blocks.proposer[11] as number] as ValidatorRecord;
    const block = k.body.blocks[0];
    expect(block.height).toBe(12);
    expect(block.proposer).toBe(validator.consensus_address);
    expect(decodeAddress(block.proposer)?.prefix).toBe('biyavalcons');
    // The same bytes the staking service sends as the validator's consensusAddress.
    const listed = await get(kratos(), 'stake', '/stake/validators?pageSize=100');
    const more = await get(kratos(), 'stake', '/stake/validators?pageSize=100&page=2');
    const staked = [...listed.body.validators, ...more.body.validators].find((v) => v.id === validator.id);
    expect(decodeAddress(staked.consensusAddress)?.hex).toBe(decodeAddress(block.proposer)?.hex);
  });
});

describe('options', () => {
  const plain = useDevnet({ dialect: 'spec', now });
  const wrapped = useDevnet({ dialect: 'spec', now, stakeEnvelope: true, explorerSuccessCode: 200 });
  const byb = useDevnet({ dialect: 'spec', now, bech32Prefix: 'byb' });

  it('wraps every successful staking answer in the envelope and leaves errors bare', async () => {
    const delegator = delegatorOf(plain(), 3);
    for (const path of [
      '/stake/validators?pagination.page_size=3',
      `/stake/delegator/delegations?delegator_address=${delegator}`,
    ]) {
      const [bare, enveloped] = await Promise.all([
        get(plain(), 'stake', path),
        get(wrapped(), 'stake', path),
      ]);
      expect(enveloped.status).toBe(200);
      expect(enveloped.body).toEqual({ code: 0, message: 'success', data: bare.body });
    }
    const update = { round_id: 'round-006', total_slots: 70 };
    const [bare, enveloped] = [await put(plain(), update), await put(wrapped(), update)];
    expect(enveloped.body).toEqual({ code: 0, message: 'success', data: bare.body });
    const failed = await get(wrapped(), 'stake', '/stake/validators?pagination.page=0');
    expect(failed.status).toBe(400);
    expect(failed.body).toEqual({ code: 400, message: 'pagination.page starts at 1' });
  });

  it('answers the explorer with the configured success code', async () => {
    const path = '/api/v1/transaction/failed-24h?pagination.page_size=3';
    const [zero, twoHundred] = await Promise.all([
      get(plain(), 'explorer', path),
      get(wrapped(), 'explorer', path),
    ]);
    expect(zero.body.code).toBe(0);
    expect(twoHundred.status).toBe(200);
    expect(twoHundred.body).toEqual({ ...zero.body, code: 200 });
    expect(wrapped().dialect).toEqual({
      name: 'spec',
      stakeEnvelope: true,
      explorerSuccessCode: 200,
      bech32Prefix: 'biya',
    });
  });

  it('re-encodes validator addresses with another prefix in spec, accounts staying 0x', async () => {
    const d = byb();
    const { body } = await get(d, 'stake', '/stake/validators?pagination.page_size=10');
    for (const v of body.validators) {
      expect(decodeAddress(v.operator_address)?.prefix).toBe('bybvaloper');
      expect(decodeAddress(v.consensus_address)?.prefix).toBe('bybvalcons');
      expect(v.wallet_address).toMatch(/^0x[0-9a-f]{40}$/);
      expect(decodeAddress(v.operator_address)?.hex).toBe(v.wallet_address.slice(2));
    }
    const next = await get(
      d,
      'stake',
      `/stake/validators?pagination.page_size=5&pagination.cursor=${body.validators[4].operator_address}`,
    );
    expect(next.body.validators).toEqual(body.validators.slice(5, 10));
    const record = d.data.validators[0] as ValidatorRecord;
    expect(d.stakeAddress(record.wallet_address)).toBe(record.wallet_address);
    expect(d.stakeAddress(record.operator_address)).toBe(
      encodeBech32('bybvaloper', record.wallet_address.slice(2)),
    );
    expect(d.explorerAddress(record.wallet_address)).toBe(record.wallet_address);
  });

  it('refuses a prefix that is not a bech32 human-readable part', async () => {
    await expect(startDevnet({ bech32Prefix: 'BYB' })).rejects.toThrow(/lowercase bech32 prefix/);
  });
});
