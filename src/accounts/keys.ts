import { hash, randomBytes } from 'node:crypto';

/**
 * API key values. Only a SHA-256 of each key is stored: keys are 128 random bits, so a fast hash is
 * enough (there is nothing to brute-force), and it keeps authentication to one indexed lookup.
 */
export const TEST_KEY_PREFIX = 'svc_test_';
export const LIVE_KEY_PREFIX = 'svc_live_';
const KEY_SHAPE = /^svc_(test|live)_[A-Za-z0-9]{16,128}$/;

export function newKeyValue(): string {
  return `${TEST_KEY_PREFIX}${randomBytes(16).toString('hex')}`;
}

export function hashKey(value: string): string {
  return hash('sha256', value);
}

export type KeyShape = 'test' | 'live' | 'malformed';

export function keyShape(value: string): KeyShape {
  const match = KEY_SHAPE.exec(value);
  if (!match) return 'malformed';
  return match[1] === 'live' ? 'live' : 'test';
}
