// The ceiling: a bare `node:http` server that reads each request to its end and answers one fixed
// shipment JSON, whatever the method and path. No framework, no routing, no database: the most any
// Node.js HTTP server can answer on this machine, measured beside the sandbox in the same run.
// Started by bench/bench.ts as a child process; prints `CEILING http://127.0.0.1:<port>` when ready.
import { createServer } from 'node:http';

const FALLBACK = JSON.stringify({
  id: 'shp_01M8199MX1B6P73ATXBE5Q712D',
  status: 'created',
  carrier: 'usps',
  service: 'ground_advantage',
  rate: { amount: '12.88', currency: 'USD' },
  from: {
    name: 'Ada Lovelace',
    address1: '417 Montgomery St',
    city: 'San Francisco',
    state: 'CA',
    zip: '94104',
    country: 'US',
  },
  to: {
    name: 'Grace Hopper',
    address1: '350 5th Ave',
    city: 'New York',
    state: 'NY',
    zip: '10118',
    country: 'US',
  },
  parcel: { weight: 1200, length: 30, width: 20, height: 10 },
  reference: 'order-1042',
  tracking_number: null,
  label_id: null,
  created_at: '2026-11-22T09:27:17Z',
  cancelled_at: null,
});

// The bench passes the sandbox's own answer for the shipment, so both send the same bytes.
const body = Buffer.from(process.env.CEILING_BODY || FALLBACK);
const headers = { 'content-type': 'application/json', 'content-length': String(body.byteLength) };

const server = createServer((req, res) => {
  req.on('end', () => {
    res.writeHead(200, headers);
    res.end(body);
  });
  req.resume();
});
server.keepAliveTimeout = 60_000;
// `--port <n>` for the cold-start comparison, whose poller must know the port before the server is up.
const portFlag = process.argv.indexOf('--port');
const port = portFlag === -1 ? 0 : Number(process.argv[portFlag + 1]);
server.listen(port, '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(
    `CEILING http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}\n`,
  );
});
const stop = () => server.close(() => process.exit(0));
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
