import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { normaliseHost } from '../core/hosts.js';

export { isLoopbackHost } from '../core/hosts.js';

/**
 * Where webhooks may deliver (docs/shared.md explains the two policies). Pure logic: it judges a URL's
 * host and the addresses a name resolved to, and never resolves or connects itself.
 *
 * `local` (a developer's machine) refuses only what no webhook ever needs: link-local addresses
 * (where cloud metadata services answer), the metadata services' names and addresses, unspecified,
 * multicast and broadcast addresses. `public` (a shared deployment) also refuses everything that is
 * not a public unicast address: loopback, private networks, shared address space and the IANA
 * special-purpose ranges, so that a tenant cannot use the sandbox to reach the host it runs on or
 * the network behind it. `--webhook-allow-host` exempts a name or an address from both.
 */
export type WebhookTargets = 'local' | 'public';

type Kind =
  | 'unspecified'
  | 'broadcast'
  | 'multicast'
  | 'linkLocal'
  | 'metadata'
  | 'loopback'
  | 'private'
  | 'sharedAddressSpace'
  | 'reserved'
  | 'public';

/** Refused under either policy. */
const ALWAYS_REFUSED: ReadonlySet<Kind> = new Set([
  'unspecified',
  'broadcast',
  'multicast',
  'linkLocal',
  'metadata',
]);

/** Each kind in words a developer can act on. */
const KIND_IN_WORDS: Record<Exclude<Kind, 'public'>, string> = {
  unspecified: 'an unspecified address (0.0.0.0/8 or ::), which is no destination',
  broadcast: 'the broadcast address',
  multicast: 'a multicast address',
  linkLocal: 'a link-local address (169.254.0.0/16 or fe80::/10, where cloud metadata services answer)',
  metadata: 'a cloud metadata service',
  loopback: 'a loopback address (the machine the sandbox runs on)',
  private: 'a private network address (10/8, 172.16/12, 192.168/16 or fc00::/7)',
  sharedAddressSpace: 'a shared address space address (100.64.0.0/10, carrier-grade NAT)',
  reserved: 'a reserved or special-purpose address, not a public one',
};

/** The names cloud providers give their metadata services (GCP's, and the short names EC2 and GCP answer). */
const METADATA_NAMES: ReadonlySet<string> = new Set([
  'metadata.google.internal',
  'metadata',
  'instance-data',
]);

/**
 * Metadata services outside link-local space: AWS's IPv6 one (inside fc00::/7) and Alibaba Cloud's
 * (inside 100.64/10), which `local` would otherwise accept as private addresses.
 */
const METADATA_ADDRESSES: ReadonlySet<string> = new Set(['fd00:ec2::254', '100.100.100.200']);

const IPV4_KINDS: Record<string, Kind> = {
  unspecified: 'unspecified',
  broadcast: 'broadcast',
  multicast: 'multicast',
  linkLocal: 'linkLocal',
  loopback: 'loopback',
  private: 'private',
  carrierGradeNat: 'sharedAddressSpace',
  unicast: 'public',
};

const IPV6_KINDS: Record<string, Kind> = {
  unspecified: 'unspecified',
  multicast: 'multicast',
  linkLocal: 'linkLocal',
  loopback: 'loopback',
  uniqueLocal: 'private',
  deprecatedSiteLocal: 'private',
};

/** How bad a kind is: an address is judged by the worst of itself and any IPv4 address inside it. */
const SEVERITY: Record<Kind, number> = {
  public: 0,
  reserved: 1,
  sharedAddressSpace: 1,
  private: 1,
  loopback: 1,
  unspecified: 2,
  broadcast: 2,
  multicast: 2,
  linkLocal: 2,
  metadata: 2,
};

/** Global unicast IPv6 (2000::/3): everything else is special-purpose or unassigned. */
const GLOBAL_UNICAST = ipaddr.IPv6.parseCIDR('2000::/3');
/** The well-known NAT64 prefix (RFC 6052); the local-use one, 64:ff9b:1::/48, is not public. */
const NAT64_WELL_KNOWN = ipaddr.IPv6.parseCIDR('64:ff9b::/96');
/** IPv4-compatible IPv6 (::a.b.c.d, deprecated by RFC 4291, still routed by some stacks). */
const IPV4_COMPATIBLE = ipaddr.IPv6.parseCIDR('::/96');

interface Classified {
  kind: Kind;
  /** The IPv4 address inside an IPv6 one (mapped, NAT64, 6to4, Teredo) that decided the kind. */
  via?: string;
}

/** Why a host or address is refused. */
export interface Refusal {
  /** The host or address as checked (`169.254.169.254`, `::1`, `metadata.google.internal`). */
  target: string;
  /** The IPv4 address embedded in `target` that is to blame, when that is where it lies. */
  via?: string;
  /** What it is, in words. */
  kind: string;
  /** True when refused under either policy; false when only `--webhook-targets public` refuses it. */
  always: boolean;
}

export interface DestinationPolicyOptions {
  targets: WebhookTargets;
  /** `--webhook-allow-host`: names and addresses exempt from both lists. */
  allowHosts: readonly string[];
}

export class DestinationPolicy {
  readonly targets: WebhookTargets;
  private readonly allowed: ReadonlySet<string>;

  constructor(options: DestinationPolicyOptions) {
    this.targets = options.targets;
    this.allowed = new Set(options.allowHosts.map(normaliseHost));
  }

  /** A host as the WHATWG URL parser gives it (`[::1]`, `10.0.0.1`, `shop.example.com.`), not resolved. */
  checkHost(hostname: string): Refusal | undefined {
    const host = normaliseHost(hostname);
    if (this.allowed.has(host)) return undefined;
    if (isIP(host)) return this.checkAddress(host);
    if (METADATA_NAMES.has(host)) return { target: host, kind: KIND_IN_WORDS.metadata, always: true };
    if (this.targets === 'public' && (host === 'localhost' || host.endsWith('.localhost'))) {
      return { target: host, kind: 'a loopback host name (localhost)', always: false };
    }
    return undefined;
  }

  /** True when the operator exempted this host (an exempt name's addresses are exempt too). */
  isAllowListed(hostname: string): boolean {
    return this.allowed.has(normaliseHost(hostname));
  }

  /** One address, as a resolver answers it or as a URL holds it. */
  checkAddress(address: string): Refusal | undefined {
    const target = normaliseHost(address);
    if (this.allowed.has(target)) return undefined;
    if (!isIP(target)) return { target, kind: 'not an IP address', always: true };
    const { kind, via } = classify(ipaddr.process(target));
    const always = ALWAYS_REFUSED.has(kind);
    if (kind === 'public' || (!always && this.targets === 'local')) return undefined;
    return { target, kind: KIND_IN_WORDS[kind], always, ...(via === undefined ? {} : { via }) };
  }
}

/** `'url'`'s refusal at registration: which kind of address, under which policy, and the operator's flag. */
export function registrationRefusal(refusal: Refusal): string {
  const where = refusal.via
    ? `${refusal.target}, which embeds ${refusal.via}, ${refusal.kind}`
    : `${refusal.target}, ${refusal.kind}`;
  const rule = refusal.always
    ? 'the sandbox never delivers webhooks there'
    : 'this sandbox runs with --webhook-targets public, which refuses every address that is not public (loopback, private, shared and reserved ones): use a receiver on a public address';
  return `'url' points at ${where}; ${rule}. An operator can exempt the host with --webhook-allow-host ${refusal.target}.`;
}

/** An attempt's error message: the name, the address it resolved to, and why nothing was sent. */
export function attemptRefusal(host: string, refusal: Refusal): string {
  const resolved = normaliseHost(host) === refusal.target ? host : `${host} resolves to ${refusal.target}`;
  const where = refusal.via ? `${resolved}, which embeds ${refusal.via}` : resolved;
  const rule = refusal.always ? 'the sandbox never delivers there' : '--webhook-targets public refuses it';
  return `${where}: ${refusal.kind}; ${rule}, so nothing was sent (an operator can exempt the host with --webhook-allow-host)`;
}

/** The kind of an address, looking inside IPv6 addresses that carry an IPv4 one. */
function classify(address: ipaddr.IPv4 | ipaddr.IPv6): Classified {
  const text = address.toString();
  if (METADATA_ADDRESSES.has(text)) return { kind: 'metadata' };
  if (address.kind() === 'ipv4') return { kind: IPV4_KINDS[address.range() as string] ?? 'reserved' };
  const v6 = address as ipaddr.IPv6;
  const range = v6.range() as string;
  const own = IPV6_KINDS[range] ?? ownKindOfIPv6(v6, range);
  let worst: Classified = { kind: own };
  for (const embedded of embeddedIPv4(v6, range)) {
    const inside = classify(embedded);
    if (SEVERITY[inside.kind] > SEVERITY[worst.kind]) {
      worst = { kind: inside.kind, via: embedded.toString() };
    }
  }
  return worst;
}

/** IPv6 that is none of the named kinds: public only when global unicast or a public translation prefix. */
function ownKindOfIPv6(address: ipaddr.IPv6, range: string): Kind {
  if (range === '6to4' || (range === 'rfc6052' && address.match(NAT64_WELL_KNOWN))) return 'public';
  if (range === 'rfc6052') return 'private';
  if (range === 'unicast' && address.match(GLOBAL_UNICAST)) return 'public';
  return 'reserved';
}

/**
 * The IPv4 addresses an IPv6 address leads to: NAT64 and SIIT (the last 32 bits), 6to4 (bits 16 to
 * 47), Teredo (its server, and its client stored inverted), IPv4-compatible (the last 32 bits).
 * (IPv4-mapped addresses are IPv4 already: `ipaddr.process` turned them.)
 */
function embeddedIPv4(address: ipaddr.IPv6, range: string): ipaddr.IPv4[] {
  const p = address.parts;
  const v4 = (high: number, low: number) => new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);
  const last = () => v4(p[6] ?? 0, p[7] ?? 0);
  switch (range) {
    case 'rfc6052':
    case 'rfc6145':
      return [last()];
    case '6to4':
      return [v4(p[1] ?? 0, p[2] ?? 0)];
    case 'teredo':
      return [v4(p[2] ?? 0, p[3] ?? 0), v4(~(p[6] ?? 0) & 0xffff, ~(p[7] ?? 0) & 0xffff)];
    case 'unicast':
      return address.match(IPV4_COMPATIBLE) ? [last()] : [];
    default:
      return [];
  }
}
