// The framework floor: Hono on @hono/node-server, the sandbox's own framework and adapter, with one
// route and no middleware, answering a fixed shipment. Beside the ceiling (bare node:http) it shows
// what the framework itself costs before the sandbox does any work: a request to the sandbox can be
// no cheaper than this. Started by bench/throughput.ts; prints `CEILING http://127.0.0.1:<port>`.
import { serve } from '@hono/node-server';
import { Hono } from 'hono';

const shipment = JSON.parse(process.env.CEILING_BODY || '{"status":"ok"}');
const app = new Hono();
app.get('/v1/shipments/:id', (c) => c.json(shipment));

const server = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, (info) => {
  process.stdout.write(`CEILING http://127.0.0.1:${info.port}\n`);
});
const stop = () => {
  server.close(() => process.exit(0));
  server.closeAllConnections?.();
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
