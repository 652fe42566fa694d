/** `npm run devnet`: the three upstream services alone, for curl, a gateway elsewhere, or a benchmark. */
import { ConfigError, loadDevnetConfig } from '../config.js';
import { startDevnet } from './index.js';

try {
  const config = loadDevnetConfig();
  const started = performance.now();
  const devnet = await startDevnet(config);
  const { blocks, txs, addresses, validators, delegations, contracts, rounds } = devnet.data;
  console.log(`SCAN_URL=${devnet.urls.scan}`);
  console.log(`EXPLORER_URL=${devnet.urls.explorer}`);
  console.log(`STAKE_URL=${devnet.urls.stake}`);
  const { name, bech32Prefix, stakeEnvelope, explorerSuccessCode } = devnet.dialect;
  console.error(
    `devnet "${config.seed}" up in ${Math.round(performance.now() - started)} ms, ${name} dialect ` +
      `(prefix ${bech32Prefix}, staking ${stakeEnvelope ? 'in the envelope' : 'bare'}, ` +
      `explorer success code ${explorerSuccessCode}): ${blocks.count} blocks, ` +
      `${txs.count} transactions, ${addresses.length} addresses, ${validators.length} validators, ` +
      `${delegations.size} delegators, ${contracts.length} contracts, ${rounds.size} buyback rounds, ` +
      `${config.blockIntervalMs ? `a block every ${config.blockIntervalMs} ms` : 'the chain standing still'}; ` +
      `bearer token "${config.token}"`,
  );
  // Under a parent process (the benchmark), answer its questions over IPC.
  process.on(
    'message',
    (message: {
      type?: string;
      ms?: number;
      blocks?: number;
      service?: 'scan' | 'explorer' | 'stake' | null;
    }) => {
      if (message.type === 'counts') process.send?.({ type: 'counts', counts: { ...devnet.counts } });
      if (message.type === 'latency') {
        devnet.setLatency(message.ms ?? 0);
        process.send?.({ type: 'latency', ms: message.ms ?? 0 });
      }
      if (message.type === 'advance') {
        process.send?.({ type: 'advance', advance: devnet.advance(message.blocks ?? 1) });
      }
      if (message.type === 'failing') {
        devnet.setFailing(message.service ?? null);
        process.send?.({ type: 'failing', service: message.service ?? null });
      }
    },
  );
  const stop = () => {
    devnet.close().then(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
} catch (error) {
  console.error(error instanceof ConfigError ? `devnet: ${error.message}` : error);
  process.exit(1);
}
