import type { Server } from 'node:http';
import type { Socket } from 'node:net';

/**
 * What happens to a new connection before Node's HTTP or TLS server takes it: the cap on each client
 * address, and on the HTTPS port a look at the first bytes, so that plain HTTP gets a plain answer.
 */

/**
 * The connections each client address holds open, counted across the listeners that share this
 * (the HTTP and the HTTPS one): an address that holds `max` has its next connection closed as it
 * arrives, so that one client cannot take the whole `--max-connections` from everyone else.
 */
export class ConnectionsPerClient {
  private readonly open = new Map<string, number>();

  constructor(readonly max: number) {}

  /** Counts `socket` until it closes; false, counting nothing, when its address is at the cap. */
  admit(socket: Socket): boolean {
    const address = clientAddress(socket);
    // No address: the client left before the connection was handed over.
    if (address === undefined) return false;
    const held = this.open.get(address) ?? 0;
    if (held >= this.max) return false;
    this.open.set(address, held + 1);
    socket.once('close', () => {
      const left = (this.open.get(address) ?? 1) - 1;
      if (left > 0) this.open.set(address, left);
      else this.open.delete(address);
    });
    return true;
  }
}

/** The client's address; an IPv4 client is one address whether it came as IPv4 or IPv6-mapped. */
export function clientAddress(socket: Socket): string | undefined {
  const address = socket.remoteAddress;
  return address?.startsWith('::ffff:') ? address.slice('::ffff:'.length) : address;
}

/** The first byte of every TLS connection: a handshake record. */
const TLS_HANDSHAKE_RECORD = 0x16;

export interface ConnectionGate {
  /** The per-client cap; none counts nothing. */
  clients?: ConnectionsPerClient | undefined;
  /** Called for each connection the cap refuses (after it is closed), with the client's address. */
  onRefused(address: string): void;
  /**
   * The HTTPS port: the server takes a connection only once its first bytes are a TLS handshake.
   * Anything else is handed to `onPlainText`, its bytes still to read, to be answered and closed; a
   * client that sends nothing for `firstBytesTimeoutMs` is cut off.
   */
  tls?: { firstBytesTimeoutMs: number; onPlainText(socket: Socket): void };
}

/**
 * Puts `gate` in front of the server's own handling of new connections. Node's HTTP and TLS servers
 * take a connection in their `'connection'` listeners (emitting that event is the documented way to
 * hand them a socket); those are taken off here and called once the gate lets the socket through.
 * Node offers neither a per-address cap nor a look at the bytes before a TLS handshake (a TLS server
 * fails a plain-HTTP request in OpenSSL and can only close it: nginx's "plain HTTP request was sent
 * to HTTPS port" needs the first byte first). test/connections.test.ts breaks if Node changes this.
 */
export function gateConnections(server: Server, gate: ConnectionGate): void {
  const own = server.listeners('connection') as ((socket: Socket) => void)[];
  server.removeAllListeners('connection');
  const handOver = (socket: Socket) => {
    for (const listener of own) listener.call(server, socket);
  };
  server.on('connection', (socket: Socket) => {
    if (gate.clients && !gate.clients.admit(socket)) {
      const address = clientAddress(socket);
      socket.destroy();
      // No address: the client had already gone, which is nothing to warn of.
      if (address !== undefined) gate.onRefused(address);
      return;
    }
    if (gate.tls) awaitTlsHandshake(socket, gate.tls, handOver);
    else handOver(socket);
  });
}

/** Reads the connection's first bytes, puts them back, and hands it on as TLS or as plain text. */
function awaitTlsHandshake(
  socket: Socket,
  { firstBytesTimeoutMs, onPlainText }: NonNullable<ConnectionGate['tls']>,
  handOver: (socket: Socket) => void,
): void {
  // A client gone before its first byte is no failure; nothing else listens to this socket yet.
  socket.on('error', () => {});
  const cutOff = () => socket.destroy();
  socket.setTimeout(firstBytesTimeoutMs, cutOff);
  socket.once('end', cutOff);
  const onReadable = () => {
    const chunk = socket.read() as Buffer | null;
    if (chunk === null) {
      socket.once('readable', onReadable);
      return;
    }
    socket.setTimeout(0);
    socket.removeListener('timeout', cutOff);
    socket.removeListener('end', cutOff);
    // Read again by whoever takes the connection (a TLS socket reads what its socket holds).
    socket.unshift(chunk);
    if (chunk[0] === TLS_HANDSHAKE_RECORD) handOver(socket);
    else onPlainText(socket);
  };
  socket.once('readable', onReadable);
}
