import { generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import ipaddr from 'ipaddr.js';

/**
 * A self-signed X.509 certificate made with Node's own crypto: an EC P-256 key, signed with ECDSA and
 * SHA-256, its DER written here. Node can make keys and signatures but not certificates, and the
 * libraries that can (selfsigned, over @peculiar/x509 and pkijs) load hundreds of files: 80 to 150 ms
 * of a fresh start (a CI runner, a new container), against about a millisecond for this. The
 * certificate is the one those libraries made for the sandbox, field for field (RFC 5280).
 */

export interface CertificateRequest {
  commonName: string;
  organization: string;
  /** DNS names and IP addresses (IPv4 or IPv6) the certificate is valid for. */
  names: readonly string[];
  notBefore: Date;
  notAfter: Date;
}

/** The PEM certificate, and its PKCS #8 PEM private key. */
export function selfSignedCertificate(request: CertificateRequest): { cert: string; key: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const subject = name(request.commonName, request.organization);
  const tbs = sequence(
    explicit(0, integer(Buffer.of(2))), // version 3
    integer(serialNumber()),
    ECDSA_WITH_SHA256,
    subject, // issuer: self-signed
    sequence(time(request.notBefore), time(request.notAfter)),
    subject,
    publicKey.export({ type: 'spki', format: 'der' }),
    explicit(3, sequence(...extensions(request.names))),
  );
  // Node signs EC keys in DER (ECDSA-Sig-Value), which is what X.509 carries.
  const signature = sign('sha256', tbs, privateKey);
  const der = sequence(tbs, ECDSA_WITH_SHA256, bitString(signature));
  return {
    cert: pem('CERTIFICATE', der),
    key: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
  };
}

const OID = {
  ecdsaWithSha256: '1.2.840.10045.4.3.2',
  commonName: '2.5.4.3',
  organizationName: '2.5.4.10',
  basicConstraints: '2.5.29.19',
  keyUsage: '2.5.29.15',
  extKeyUsage: '2.5.29.37',
  subjectAltName: '2.5.29.17',
  serverAuth: '1.3.6.1.5.5.7.3.1',
} as const;

const ECDSA_WITH_SHA256 = sequence(objectId(OID.ecdsaWithSha256));

/**
 * An end-entity certificate for a TLS server: not a CA (Firefox refuses a CA certificate as a
 * server's), for signatures only (ECDSA), for server authentication, under `names`.
 */
function extensions(names: readonly string[]): Buffer[] {
  const digitalSignature = Buffer.of(0x03, 0x02, 0x07, 0x80); // BIT STRING, bit 0 set
  return [
    extension(OID.basicConstraints, true, sequence()),
    extension(OID.keyUsage, true, digitalSignature),
    extension(OID.extKeyUsage, false, sequence(objectId(OID.serverAuth))),
    extension(
      OID.subjectAltName,
      false,
      sequence(
        ...names.map(
          (entry) =>
            ipVersion(entry) === 0
              ? tagged(0x82, Buffer.from(entry, 'ascii')) // dNSName [2] IA5String
              : tagged(0x87, Buffer.from(ipaddr.parse(entry).toByteArray())), // iPAddress [7]
        ),
      ),
    ),
  ];
}

/**
 * 4 or 6 for an IP address, 0 for a name: what `net.isIP` answers, without the regular expressions
 * (its own, or ipaddr.js's) whose first use compiles for several milliseconds of a start. The URL
 * parser checks IPv6 natively; IPv4 is the dotted quad `net.isIP` accepts, without leading zeros.
 */
export function ipVersion(name: string): 0 | 4 | 6 {
  if (name.includes(':')) {
    // A zone (`fe80::1%eth0`) is no part of a URL's host.
    const zone = name.indexOf('%');
    if (zone !== -1 && !/^[0-9a-zA-Z.:-]+$/.test(name.slice(zone + 1))) return 0;
    return URL.canParse(`http://[${zone === -1 ? name : name.slice(0, zone)}]/`) ? 6 : 0;
  }
  const parts = name.split('.');
  const octet = (part: string) =>
    part.length > 0 &&
    part.length <= 3 &&
    [...part].every((c) => c >= '0' && c <= '9') &&
    (part === '0' || !part.startsWith('0')) &&
    Number(part) <= 255;
  return parts.length === 4 && parts.every(octet) ? 4 : 0;
}

function extension(id: string, critical: boolean, value: Buffer): Buffer {
  return sequence(
    objectId(id),
    ...(critical ? [Buffer.of(0x01, 0x01, 0xff)] : []),
    tagged(0x04, value), // OCTET STRING holding the value's DER
  );
}

function name(commonName: string, organization: string): Buffer {
  const attribute = (id: string, value: string) =>
    set(sequence(objectId(id), tagged(0x13, Buffer.from(value, 'ascii')))); // PrintableString
  return sequence(attribute(OID.commonName, commonName), attribute(OID.organizationName, organization));
}

/** Positive and at most 20 bytes, as RFC 5280 asks; random, so no two certificates share one. */
function serialNumber(): Buffer {
  const bytes = randomBytes(16);
  // The top bit clear keeps it positive; the next one set keeps its DER minimal (no leading zero).
  bytes[0] = ((bytes[0] ?? 0) & 0x7f) | 0x40;
  return bytes;
}

/** UTCTime through 2049, GeneralizedTime from 2050 (RFC 5280 §4.1.2.5), to the second. */
function time(date: Date): Buffer {
  const digits = date
    .toISOString()
    .replace(/\.\d{3}Z$/, 'Z')
    .replace(/[-:T]/g, '');
  return date.getUTCFullYear() < 2050
    ? tagged(0x17, Buffer.from(digits.slice(2), 'ascii'))
    : tagged(0x18, Buffer.from(digits, 'ascii'));
}

function pem(label: string, der: Buffer): string {
  const lines = der.toString('base64').match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join('\n')}\n-----END ${label}-----\n`;
}

// DER, as much of it as a certificate needs (X.690).

function tagged(tag: number, content: Buffer): Buffer {
  return Buffer.concat([Buffer.of(tag), length(content.length), content]);
}

function length(n: number): Buffer {
  if (n < 0x80) return Buffer.of(n);
  const bytes: number[] = [];
  for (let rest = n; rest > 0; rest = Math.floor(rest / 256)) bytes.unshift(rest % 256);
  return Buffer.of(0x80 | bytes.length, ...bytes);
}

function sequence(...items: Buffer[]): Buffer {
  return tagged(0x30, Buffer.concat(items));
}

function set(...items: Buffer[]): Buffer {
  return tagged(0x31, Buffer.concat(items));
}

function explicit(number: number, content: Buffer): Buffer {
  return tagged(0xa0 | number, content);
}

/** A non-negative integer from its big-endian bytes. */
function integer(bytes: Buffer): Buffer {
  return tagged(0x02, (bytes[0] ?? 0) & 0x80 ? Buffer.concat([Buffer.of(0), bytes]) : bytes);
}

function bitString(bytes: Buffer): Buffer {
  return tagged(0x03, Buffer.concat([Buffer.of(0), bytes])); // no unused bits
}

function objectId(dotted: string): Buffer {
  const [first = 0, second = 0, ...rest] = dotted.split('.').map(Number);
  const bytes = [first * 40 + second];
  for (const arc of rest) {
    const base128 = [arc & 0x7f];
    for (let high = arc >>> 7; high > 0; high >>>= 7) base128.unshift((high & 0x7f) | 0x80);
    bytes.push(...base128);
  }
  return tagged(0x06, Buffer.from(bytes));
}
