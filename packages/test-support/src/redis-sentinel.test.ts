import { afterAll, expect, it } from 'vitest';
import { cli } from './redis-server.js';
import { startRedisSentinel, type RedisSentinelHandle } from './redis-sentinel.js';

let deployment: RedisSentinelHandle | undefined;

afterAll(async () => {
  await deployment?.stop();
});

/** The master's port a sentinel names for `name`. */
function masterPortOf(sentinelPort: number, name: string): number {
  return Number(cli(sentinelPort, ['SENTINEL', 'GET-MASTER-ADDR-BY-NAME', name]).split('\n')[1]);
}

function answers(port: number): boolean {
  try {
    return cli(port, ['PING']).trim() === 'PONG';
  } catch {
    return false;
  }
}

it('three sentinels: each names the master, the replica follows it; failover() promotes the replica, once; stop() kills every node', async () => {
  deployment = await startRedisSentinel({ name: 'three', sentinels: 3 });
  const { sentinels, master, replica } = deployment;
  expect(sentinels).toHaveLength(3);
  expect(new Set([master.port, replica.port, ...sentinels.map((s) => s.port)]).size).toBe(5);
  for (const { port } of sentinels) expect(masterPortOf(port, 'three')).toBe(master.port);
  expect(cli(replica.port, ['INFO', 'replication'])).toContain(`master_port:${master.port}`);

  const promoted = await deployment.failover();
  expect(promoted).toEqual(replica);
  for (const { port } of sentinels) expect(masterPortOf(port, 'three')).toBe(replica.port);
  expect(cli(replica.port, ['ROLE']).split('\n')[0]).toBe('master');
  await expect(deployment.failover()).rejects.toThrow(/once per deployment/);

  await deployment.stop();
  for (const port of [master.port, replica.port, ...sentinels.map((s) => s.port)]) expect(answers(port)).toBe(false);
}, 30_000);
