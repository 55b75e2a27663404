/** The Cluster slot of a key (CRC16 of its hash tag, modulo 16384), as ioredis computes it. */
declare module 'cluster-key-slot' {
  function calculateSlot(key: string | Buffer): number;
  export default calculateSlot;
}
