import { SCOPES } from '../core/actor.js';
import { MAX_RETRIES } from '../core/duration.js';
import { TimestampSchema } from '../core/schemas.js';
import { z } from '../core/zod.js';
import { PLANS } from './plans.js';

export const CreateAccountSchema = z
  .object({
    name: z.string().trim().min(1, 'must not be empty').max(100, 'must be at most 100 characters').optional(),
    plan: z.enum(PLANS).optional().openapi({ description: 'default growth' }),
  })
  .strict()
  .openapi('CreateAccount');

export const AccountCreatedSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    plan: z.enum(PLANS),
    created_at: TimestampSchema,
    api_key: z.string().openapi({ description: 'an all-scopes test key; shown only here' }),
  })
  .openapi('AccountCreated');

export const AccountSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    plan: z.enum(PLANS),
    default_scenario: z.string().openapi({ description: 'the scenario a new label starts' }),
    webhook_retry_schedule: z
      .array(z.number())
      .openapi({ description: 'seconds before each webhook retry; the server ladder unless set' }),
    rate_limits: z.boolean().openapi({ description: 'whether the plan and key ceilings are enforced' }),
    created_at: TimestampSchema,
  })
  .openapi('Account');

export const AccountSettingsSchema = z
  .object({
    plan: z.enum(PLANS).optional(),
    default_scenario: z.string().min(1, 'must not be empty').optional().openapi({ example: 'express' }),
    webhook_retry_schedule: z
      .array(z.union([z.number(), z.string()]))
      .max(MAX_RETRIES, `must have at most ${MAX_RETRIES} delays`)
      .nullable()
      .optional()
      .openapi({
        example: ['10s', '1m'],
        description:
          'delays before each retry, each a whole number of seconds from 1 second to 30 days; [] for no retries; null restores the server ladder',
      }),
    rate_limits: z
      .boolean()
      .optional()
      .openapi({ description: 'false switches rate limiting off for this account' }),
  })
  .strict()
  .openapi('AccountSettings');

export const CreateKeySchema = z
  .object({
    name: z.string().trim().min(1, 'must not be empty').max(100, 'must be at most 100 characters'),
    scopes: z
      .array(z.enum(SCOPES))
      .min(1, 'must name at least one scope')
      .refine((list) => new Set(list).size === list.length, 'must not name a scope twice')
      .optional()
      .openapi({ description: 'a subset of the scopes; all of them when omitted' }),
  })
  .strict()
  .openapi('CreateKey');

export const KeySchema = z
  .object({
    id: z.string(),
    name: z.string(),
    scopes: z.array(z.enum(SCOPES)),
    created_at: TimestampSchema,
    last_used_at: TimestampSchema.nullable(),
    last4: z.string().openapi({ description: 'the last four characters of the value' }),
    revoked_at: TimestampSchema.nullable(),
  })
  .openapi('ApiKey');

export const KeyListSchema = z.object({ data: z.array(KeySchema) }).openapi('ApiKeyList');

export const CreatedKeySchema = z
  .object({
    id: z.string(),
    name: z.string(),
    scopes: z.array(z.enum(SCOPES)),
    created_at: TimestampSchema,
    value: z.string().openapi({ description: 'the key itself, shown only in this answer' }),
  })
  .openapi('CreatedKey');

export const RevokedKeySchema = z
  .object({ id: z.string(), revoked_at: TimestampSchema })
  .openapi('RevokedKey');

export type CreateAccountInput = z.infer<typeof CreateAccountSchema>;
export type AccountSettingsInput = z.infer<typeof AccountSettingsSchema>;
export type CreateKeyInput = z.infer<typeof CreateKeySchema>;
