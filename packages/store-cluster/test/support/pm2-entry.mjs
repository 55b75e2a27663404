// PM2 refuses a .ts script on Node 20: it runs this one, which imports the TypeScript fixture named
// by RL_ENTRY through the loader its node_args register (see pm2.test.ts).
await import(new URL(process.env.RL_ENTRY, import.meta.url).href);
