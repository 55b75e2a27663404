// Under construction in this session.
export {};
