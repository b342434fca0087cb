import { createRoute, z } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { clockNow } from '../clock/clock.js';
import { ApiError } from '../core/errors.js';
import { requireScope } from '../http/auth.js';
import { actorOf } from '../http/context.js';
import {
  BEARER_SECURITY,
  COMMON_ERRORS,
  createRouter,
  errorResponses,
  idParam,
  jsonBody,
  jsonResponse,
} from '../http/router.js';
import { getShipment } from '../shipments/service.js';
import type { State } from '../state.js';
import { CreateLabelSchema, LabelSchema, VoidedLabelSchema } from './schema.js';
import { generateLabel, getLabel, labelFileName, presentLabel, voidLabel } from './service.js';

const IdParam = idParam('lbl_01JD…');
const FileParam = z.object({
  file: z.string().openapi({ param: { name: 'file', in: 'path' }, example: 'lbl_01JD….pdf' }),
});
const SignatureQuery = z.object({
  expires: z
    .string()
    .optional()
    .openapi({ param: { name: 'expires', in: 'query' } }),
  signature: z
    .string()
    .optional()
    .openapi({ param: { name: 'signature', in: 'query' } }),
});
const security = BEARER_SECURITY;
const tags = ['Labels'];
const binary = z.string().openapi({ format: 'binary' });
const FILE_CONTENT = {
  'application/pdf': { schema: binary },
  'image/png': { schema: binary },
  'application/zpl': { schema: binary },
};

/** `{cdn_url}`: the configured origin, or this server's own as the client reached it. */
export function cdnBase(state: State, c: Context): string {
  return state.config.cdnUrl ?? `${new URL(c.req.url).origin}/cdn`;
}

export function labelRoutes(state: State) {
  const router = createRouter();
  const read = requireScope('shipments:read');
  const write = requireScope('shipments:write');

  router.openapi(
    createRoute({
      method: 'post',
      path: '/labels',
      tags,
      summary: 'Generate a label for a shipment',
      security,
      middleware: [write] as const,
      request: { body: jsonBody(CreateLabelSchema) },
      responses: {
        201: jsonResponse(LabelSchema, 'The label, with a pre-signed URL valid 7 days'),
        ...errorResponses(...COMMON_ERRORS, 404, 422),
      },
    }),
    (c) => {
      const base = cdnBase(state, c);
      const label = generateLabel(state, actorOf(c.get('auth')), c.req.valid('json'), base);
      return c.json(presentLabel(state, label, base), 201);
    },
  );

  router.openapi(
    createRoute({
      method: 'get',
      path: '/labels/{id}',
      tags,
      summary: 'Get a label',
      security,
      middleware: [read] as const,
      request: { params: IdParam },
      responses: { 200: jsonResponse(LabelSchema, 'The label'), ...errorResponses(...COMMON_ERRORS, 404) },
    }),
    (c) => {
      const label = getLabel(state, actorOf(c.get('auth')), c.req.valid('param').id);
      return c.json(presentLabel(state, label, cdnBase(state, c)), 200);
    },
  );

  router.openapi(
    createRoute({
      method: 'get',
      path: '/labels/{id}/download',
      tags,
      summary: 'Download the label file',
      security,
      middleware: [read] as const,
      request: { params: IdParam },
      responses: {
        200: { description: 'The label file', content: FILE_CONTENT },
        ...errorResponses(...COMMON_ERRORS, 404),
      },
    }),
    async (c) => {
      const actor = actorOf(c.get('auth'));
      const label = getLabel(state, actor, c.req.valid('param').id);
      return sendFile(c, state, label, getShipment(state, actor, label.shipmentId));
    },
  );

  router.openapi(
    createRoute({
      method: 'delete',
      path: '/labels/{id}',
      tags,
      summary: 'Void a label and refund it',
      security,
      middleware: [write] as const,
      request: { params: IdParam },
      responses: {
        200: jsonResponse(VoidedLabelSchema, 'The voided label and its refund'),
        ...errorResponses(...COMMON_ERRORS, 404, 422),
      },
    }),
    (c) => c.json(voidLabel(state, actorOf(c.get('auth')), c.req.valid('param').id), 200),
  );

  return router;
}

/**
 * The CDN: pre-signed label URLs, served without an API key. The signature is checked before
 * anything is looked up, so an altered URL learns nothing; expiry is judged on the clock of the
 * account that owns the label.
 */
export function cdnRoutes(state: State, realNow: () => number) {
  const router = createRouter();
  router.openapi(
    createRoute({
      method: 'get',
      path: '/labels/{file}',
      tags: ['CDN'],
      summary: 'Download a label through its pre-signed URL (no API key)',
      request: { params: FileParam, query: SignatureQuery },
      responses: {
        200: { description: 'The label file', content: FILE_CONTENT },
        ...errorResponses(403, 404, 500),
      },
    }),
    async (c) => {
      const { file } = c.req.valid('param');
      const { expires, signature } = c.req.valid('query');
      if (!state.urlSigner.verify(file, expires, signature)) {
        throw new ApiError(
          403,
          'invalid_signature',
          'The URL signature does not match; use label_url unchanged.',
        );
      }
      const label = state.labels.findAnywhere(file.replace(/\.[a-z]+$/, ''));
      const account = label && state.accounts.find(label.accountId);
      if (!label || !account) throw new ApiError(404, 'not_found', 'The label no longer exists.');
      const now = clockNow(account.clock, realNow());
      if (now >= Number(expires) * 1000) {
        throw new ApiError(
          403,
          'url_expired',
          'This label URL has expired; download the label with GET /v1/labels/{id}/download and your API key.',
        );
      }
      return sendFile(
        c,
        state,
        label,
        getShipment(state, { accountId: label.accountId, now }, label.shipmentId),
      );
    },
  );
  return router;
}

async function sendFile(
  c: Context,
  state: State,
  label: Parameters<State['labelFiles']['get']>[0],
  shipment: Parameters<State['labelFiles']['get']>[1],
) {
  const file = await state.labelFiles.get(label, shipment);
  return c.body(file.bytes as Uint8Array<ArrayBuffer>, 200, {
    'content-type': file.contentType,
    'content-disposition': `attachment; filename="${labelFileName(label)}"`,
    'cache-control': 'private, max-age=300',
  });
}
