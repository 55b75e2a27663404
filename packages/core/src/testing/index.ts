// The conformance suite: under construction in this session.
export {};
