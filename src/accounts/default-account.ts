import { readJsonFixture } from '../core/fixtures.js';
import { z } from '../core/zod.js';
import { PLANS } from './plans.js';

const DefaultAccountFixture = z.object({
  id: z.string().startsWith('acct_'),
  name: z.string().min(1),
  plan: z.enum(PLANS),
  api_key: z.object({
    id: z.string().startsWith('key_'),
    name: z.string().min(1),
    value: z.string().startsWith('svc_test_'),
  }),
});

/** The account every fresh sandbox has, with a key fixed in `fixtures/` so CI jobs can hard-code it. */
export const DEFAULT_ACCOUNT = DefaultAccountFixture.parse(readJsonFixture('default-account.json').json);
