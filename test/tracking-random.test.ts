import { faker } from '@faker-js/faker/locale/base';
import { describe, expect, it } from 'vitest';
import { mersenneTwister } from '../src/tracking/random.js';

describe('mersenneTwister', () => {
  it("draws faker's numbers for the same seed, draw for draw, past the state's first twist", () => {
    // Seeds are the first four bytes of a SHA-256: any 32-bit number, the top bit set or not.
    const seeds = [0, 1, 42, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1, 0x9e3779b9, 123456789];
    for (let i = 0; i < 40; i++) seeds.push(Math.floor(Math.random() * 2 ** 32));
    for (const seed of seeds) {
      const ours = mersenneTwister(seed);
      faker.seed(seed);
      // 700 draws take 1,400 words: the state is twisted again twice on the way.
      const theirs = Array.from({ length: 700 }, () => faker.number.float());
      expect([seed, Array.from({ length: 700 }, () => ours())]).toEqual([seed, theirs]);
    }
  });

  it('draws in [0, 1), and differently for different seeds', () => {
    const draws = Array.from({ length: 1000 }, mersenneTwister(7));
    expect(draws.every((n) => n >= 0 && n < 1)).toBe(true);
    expect(new Set(draws).size).toBe(1000);
    expect(mersenneTwister(8)()).not.toBe(draws[0]);
  });
});
