import type { Rng } from './journey.js';

const WORDS = 624;
const MIDDLE = 397;
const MATRIX_A = 0x9908b0df;
const UPPER_BIT = 0x80000000;
const LOWER_BITS = 0x7fffffff;

/**
 * A Mersenne Twister (MT19937) seeded with one 32-bit number, drawing doubles in [0, 1) from 53
 * random bits: draw for draw the numbers of faker's `faker.seed(seed)` then `faker.number.float()`,
 * which planned every journey before (a test holds them equal). A label's timeline is planned again
 * each time one of its steps runs; faker keeps its 624 words of state as JavaScript numbers, most of
 * them boxed, and seeding it was half the cost of a plan. Here the state is an Int32Array, whose
 * stores wrap to 32 bits as the algorithm wants.
 */
export function mersenneTwister(seed: number): Rng {
  const state = new Int32Array(WORDS);
  state[0] = seed;
  for (let i = 1; i < WORDS; i++) {
    const previous = state[i - 1] as number;
    state[i] = Math.imul(1812433253, previous ^ (previous >>> 30)) + i;
  }
  twist(state);
  let index = 0;

  const nextUint32 = (): number => {
    let y = state[index] as number;
    y ^= y >>> 11;
    y ^= (y << 7) & 0x9d2c5680;
    y ^= (y << 15) & 0xefc60000;
    y ^= y >>> 18;
    index += 1;
    if (index >= WORDS) {
      twist(state);
      index = 0;
    }
    return y >>> 0;
  };
  // 27 bits then 26 bits, in that order, as faker's `nextF53` draws them.
  return () => {
    const high = nextUint32() >>> 5;
    const low = nextUint32() >>> 6;
    return (high * 67108864 + low) * 2 ** -53;
  };
}

/** The next 624 words of state, in place. */
function twist(state: Int32Array): void {
  for (let i = 0; i < WORDS; i++) {
    const y = ((state[i] as number) & UPPER_BIT) | ((state[(i + 1) % WORDS] as number) & LOWER_BITS);
    state[i] = (state[(i + MIDDLE) % WORDS] as number) ^ (y >>> 1) ^ (-(y & 1) & MATRIX_A);
  }
}
