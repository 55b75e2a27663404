// The shared HTTP layer (headers, keys, responses) used by the framework adapters.
export {};
