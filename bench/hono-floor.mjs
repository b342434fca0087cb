// The framework floor: Hono on @hono/node-server, the sandbox's own framework and adapter, with two
// routes and no middleware. `GET /v1/shipments/:id` answers a fixed shipment; `POST /v1/shipments`
// reads the request's JSON body as Hono does (`c.req.json()`) and answers a fixed shipment with 201.
// What the framework itself costs before the sandbox does any work: a request to the sandbox can be no
// cheaper than this, and the ratio targets are judged against it. Started by
// bench/throughput.ts; prints `CEILING http://127.0.0.1:<port>`.
import { serve } from '@hono/node-server';
import { Hono } from 'hono';

const shipment = JSON.parse(process.env.CEILING_BODY || '{"status":"ok"}');
const created = JSON.parse(process.env.CEILING_POST_BODY || process.env.CEILING_BODY || '{"status":"ok"}');
const app = new Hono();
app.get('/v1/shipments/:id', (c) => c.json(shipment));
app.post('/v1/shipments', async (c) => {
  const body = await c.req.json();
  // Read, not only received: a body that is not an object is refused, as the sandbox refuses it.
  if (typeof body !== 'object' || body === null) return c.json({ error: 'not an object' }, 400);
  return c.json(created, 201);
});

const server = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, (info) => {
  process.stdout.write(`CEILING http://127.0.0.1:${info.port}\n`);
});
const stop = () => {
  server.close(() => process.exit(0));
  server.closeAllConnections?.();
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
