import type { FastifyReply, FastifyRequest } from 'fastify';
import type { HttpRateLimitOptions, RateLimitResult } from '@rl/core';

/**
 * Sends the response for a denied request. Status (429, or 503 for a fail-closed store outage),
 * Retry-After and the RateLimit headers are already set. Send with `reply.send()`, or return the
 * payload; when it does neither, the default problem+json body is sent.
 */
export type OnLimitHandler = (request: FastifyRequest, reply: FastifyReply, result: RateLimitResult) => unknown;

/** Options of one route (`config: { rateLimit }`), merged over the plugin's options. */
export interface RouteRateLimitOptions extends Partial<HttpRateLimitOptions<FastifyRequest, FastifyReply>> {
  /** Replaces the default denial body. */
  onLimit?: OnLimitHandler;
  /** The hook the limit runs in: `'onRequest'` (default: before the body is parsed) or `'preHandler'` (after parsing and validation, for a key or cost that reads the body or an authenticated user). */
  hook?: 'onRequest' | 'preHandler';
  /**
   * With `skipFailedRequests` or `skipSuccessfulRequests`: whether a sent response counts as a
   * success (sync or async). Default: `reply.statusCode < 400`.
   */
  requestWasSuccessful?: (request: FastifyRequest, reply: FastifyReply) => boolean | Promise<boolean>;
}

/** A limit as a Fastify hook (`onRequest` or `preHandler`), from `fastify.rateLimit()`. */
export type RateLimitHook = (request: FastifyRequest, reply: FastifyReply, done: (error?: Error) => void) => void;

/** Options of the plugin: the shared options of every adapter, plus `global`, `hook` and `onLimit`. */
export interface RateLimitPluginOptions extends RouteRateLimitOptions {
  /** Apply the limit to every route (default true). With false, only routes with `config.rateLimit` are limited. */
  global?: boolean;
}
