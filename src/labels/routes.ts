import { createRoute, z } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { requireScope } from '../http/auth.js';
import type { AppEnv } from '../http/context.js';
import {
  apiErrors,
  apiResponse,
  BEARER_SECURITY,
  createRouter,
  ErrorCodes,
  fileResponse,
  idParam,
  jsonBody,
  openErrors,
  sendJsonText,
} from '../http/router.js';
import { LABEL_CONTENT_TYPES, type RenderedLabel } from './render/index.js';
import { CreateLabelSchema, LabelSchema, VoidedLabelSchema } from './schema.js';
import { type LabelService, labelFileName } from './service.js';
import type { LabelRecord } from './store.js';

export const IdParam = idParam('lbl_01JD…');
const FileParam = z.object({
  file: z.string().openapi({ param: { name: 'file', in: 'path' }, example: 'lbl_01JD….pdf' }),
});
const SignatureQuery = z.object({
  // Read as text: the URL's signature covers it as it was written.
  expires: z
    .string()
    .optional()
    .openapi({
      param: { name: 'expires', in: 'query' },
      type: 'integer',
      description:
        'when the URL expires, in Unix seconds, as `label_url` writes it (digits only, no leading zero): any other spelling is `403 invalid_signature`',
    }),
  signature: z
    .string()
    .optional()
    .openapi({ param: { name: 'signature', in: 'query' }, description: 'hex HMAC of the URL' }),
});
const security = BEARER_SECURITY;
const tags = ['Labels'];
export const LABEL_MEDIA_TYPES = Object.values(LABEL_CONTENT_TYPES);
export const FILE_DESCRIPTION =
  'The label file, in the format it was generated in (`Content-Disposition: attachment; filename="<label id>.<pdf|png|zpl>"`)';

/** `{cdn_url}`: the configured origin, or this server's own as the client reached it. */
export type CdnBase = (c: Context) => string;

/** What generating and voiding can answer besides every route's codes (the twins under /_sandbox too). */
export const GENERATE_ERRORS = [
  ...ErrorCodes.body,
  ...ErrorCodes.validation,
  'not_found',
  'label_already_exists',
  'shipment_cancelled',
  ...ErrorCodes.write,
] as const;
export const VOID_ERRORS = [
  ...ErrorCodes.lookup,
  'label_already_voided',
  'void_window_expired',
  'label_already_scanned',
  ...ErrorCodes.write,
] as const;

export function labelRoutes(labels: LabelService, cdnBase: CdnBase) {
  const router = createRouter();
  const read = requireScope('shipments:read');
  const write = requireScope('shipments:write');

  router.openapi(
    createRoute({
      method: 'post',
      path: '/labels',
      operationId: 'createLabel',
      tags,
      summary: 'Generate a label for a shipment',
      security,
      middleware: [write] as const,
      request: { body: jsonBody(CreateLabelSchema) },
      responses: {
        201: apiResponse(LabelSchema, 'The label, with a pre-signed URL valid 7 days'),
        ...apiErrors(...GENERATE_ERRORS),
      },
    }),
    async (c) =>
      sendJsonText(c, await labels.generate(c.get('caller'), c.req.valid('json'), cdnBase(c)), 201),
  );

  router.openapi(
    createRoute({
      method: 'get',
      path: '/labels/{id}',
      operationId: 'getLabel',
      tags,
      summary: 'Get a label',
      security,
      middleware: [read] as const,
      request: { params: IdParam },
      responses: { 200: apiResponse(LabelSchema, 'The label'), ...apiErrors(...ErrorCodes.lookup) },
    }),
    async (c) =>
      c.json(labels.present(await labels.get(c.get('caller'), c.req.valid('param').id), cdnBase(c)), 200),
  );

  router.openapi(
    createRoute({
      method: 'get',
      path: '/labels/{id}/download',
      operationId: 'downloadLabel',
      tags,
      summary: 'Download the label file',
      security,
      middleware: [read] as const,
      request: { params: IdParam },
      responses: {
        200: fileResponse(FILE_DESCRIPTION, LABEL_MEDIA_TYPES, true),
        ...apiErrors(...ErrorCodes.lookup),
      },
    }),
    (c) => sendLabelFile(c, labels, c.req.valid('param').id),
  );

  router.openapi(
    createRoute({
      method: 'delete',
      path: '/labels/{id}',
      operationId: 'voidLabel',
      tags,
      summary: 'Void a label and refund it',
      security,
      middleware: [write] as const,
      request: { params: IdParam },
      responses: {
        200: apiResponse(VoidedLabelSchema, 'The voided label and its refund'),
        ...apiErrors(...VOID_ERRORS),
      },
    }),
    async (c) => sendJsonText(c, await labels.void(c.get('caller'), c.req.valid('param').id), 200),
  );

  return router;
}

/** The CDN: pre-signed label URLs, served without an API key. */
export function cdnRoutes(labels: LabelService) {
  const router = createRouter();
  router.openapi(
    createRoute({
      method: 'get',
      path: '/labels/{file}',
      operationId: 'downloadLabelBySignedUrl',
      tags: ['CDN'],
      summary: 'Download a label through its pre-signed URL (no API key)',
      security: [],
      request: { params: FileParam, query: SignatureQuery },
      responses: {
        200: fileResponse(FILE_DESCRIPTION, LABEL_MEDIA_TYPES, false),
        ...openErrors(...ErrorCodes.query, 'url_expired', 'invalid_signature', 'not_found'),
      },
    }),
    async (c) => {
      const { expires, signature } = c.req.valid('query');
      const found = await labels.fileBySignedUrl(c.req.valid('param').file, expires, signature);
      return sendFile(c, found.label, found.file);
    },
  );
  return router;
}

/** The caller's label `id` as its file, in its own format (the route and its twin under /_sandbox). */
export async function sendLabelFile(c: Context<AppEnv>, labels: LabelService, id: string) {
  const caller = c.get('caller');
  const label = await labels.get(caller, id);
  return sendFile(c, label, await labels.file(caller, label));
}

/** A label's file as an attachment named after the label. */
function sendFile(c: Context, label: LabelRecord, file: RenderedLabel) {
  return c.body(file.bytes as Uint8Array<ArrayBuffer>, 200, {
    'content-type': file.contentType,
    'content-disposition': `attachment; filename="${labelFileName(label)}"`,
    'cache-control': 'private, max-age=300',
  });
}
