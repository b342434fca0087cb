// The ceiling: a bare `node:http` server that reads each request to its end and answers one fixed
// shipment JSON, whatever the method and path. No framework, no routing, no database: the most any
// Node.js HTTP server can answer on this machine, measured beside the sandbox in the same run.
// Started by bench/bench.ts as a child process; prints `CEILING http://127.0.0.1:<port>` when ready.
import { createServer } from 'node:http';

// For throughput the bench passes the sandbox's own answer for a shipment, so both servers send the
// same bytes; the cold-start measure only needs a 200.
const body = Buffer.from(process.env.CEILING_BODY || '{"status":"ok"}');
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
