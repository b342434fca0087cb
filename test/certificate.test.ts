import { createPrivateKey, X509Certificate } from 'node:crypto';
import { once } from 'node:events';
import { type AddressInfo, isIP } from 'node:net';
import { connect, createServer } from 'node:tls';
import { describe, expect, it } from 'vitest';
import { ipVersion, selfSignedCertificate } from '../src/http/certificate.js';

const request = {
  commonName: 'localhost',
  organization: 'Shipping Sandbox',
  names: ['localhost', '127.0.0.1', '::1', 'sandbox.test'],
  notBefore: new Date('2026-11-21T08:23:14.250Z'),
  notAfter: new Date('2029-02-24T08:23:14.999Z'),
};

// Read back by OpenSSL's parser, behind Node's X509Certificate.
const made = selfSignedCertificate(request);
const certificate = new X509Certificate(made.cert);

describe('a self-signed certificate made with node:crypto', () => {
  it('is signed by its own key, the PKCS #8 key returned beside it', () => {
    expect(made.key).toMatch(/^-----BEGIN PRIVATE KEY-----\n/);
    expect(certificate.verify(certificate.publicKey)).toBe(true);
    expect(certificate.checkPrivateKey(createPrivateKey(made.key))).toBe(true);
    expect(certificate.publicKey.asymmetricKeyDetails).toEqual({ namedCurve: 'prime256v1' });
  });

  it('names its subject and issuer, and is valid from and to the second asked', () => {
    expect(certificate.subject).toBe('CN=localhost\nO=Shipping Sandbox');
    expect(certificate.issuer).toBe(certificate.subject);
    expect(certificate.validFrom).toBe('Nov 21 08:23:14 2026 GMT');
    expect(certificate.validTo).toBe('Feb 24 08:23:14 2029 GMT');
  });

  it('covers DNS names as DNS entries and addresses, IPv6 included, as IP entries', () => {
    expect(certificate.subjectAltName).toBe(
      'DNS:localhost, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1, DNS:sandbox.test',
    );
    expect(certificate.checkHost('sandbox.test')).toBe('sandbox.test');
    expect(certificate.checkIP('::1')).toBe('::1');
    expect(certificate.checkHost('other.test')).toBeUndefined();
    expect(certificate.checkIP('127.0.0.2')).toBeUndefined();
  });

  it('is a server certificate, not a CA', () => {
    expect(certificate.ca).toBe(false);
    // Node lists the extended key usages here: serverAuth only.
    expect(certificate.keyUsage).toEqual(['1.3.6.1.5.5.7.3.1']);
  });

  it('has a positive serial number of its own each time', () => {
    const other = new X509Certificate(selfSignedCertificate(request).cert);
    expect(certificate.serialNumber).toMatch(/^[4-7][0-9A-F]{31}$/);
    expect(other.serialNumber).not.toBe(certificate.serialNumber);
  });

  it('writes dates from 2050 on as GeneralizedTime', () => {
    const late = new X509Certificate(
      selfSignedCertificate({ ...request, notAfter: new Date('2051-01-02T03:04:05Z') }).cert,
    );
    expect(late.validTo).toBe('Jan  2 03:04:05 2051 GMT');
  });

  it('passes a TLS client that trusts it, for a name it covers, and fails one for another name', async () => {
    const server = createServer({ cert: made.cert, key: made.key }, (socket) => socket.end('hello'));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    const handshake = (servername: string) =>
      new Promise<string>((resolve, reject) => {
        const socket = connect({ host: '127.0.0.1', port, servername, ca: made.cert }, () => {
          socket.setEncoding('utf8');
          socket.once('data', resolve);
        });
        socket.once('error', reject);
      });
    try {
      await expect(handshake('sandbox.test')).resolves.toBe('hello');
      await expect(handshake('other.test')).rejects.toMatchObject({ code: 'ERR_TLS_CERT_ALTNAME_INVALID' });
    } finally {
      server.close();
    }
  });
});

describe('ipVersion', () => {
  it('answers as net.isIP does', () => {
    const names = [
      ...['localhost', 'sandbox.test', '1234', '1.2.3', '1.2.3.4.5', '1.2.3.4.', '0x7f.0.0.1', '256.1.1.1'],
      ...['01.2.3.4', '1.2.3.04', '1.2.3.-4', '0.0.0.0', '127.0.0.1', '255.255.255.255', '1.2.3.4%eth0'],
      ...['::', '::1', '2001:db8::1', '::ffff:1.2.3.4', '::ffff:256.1.1.1', '1:2:3:4:5:6:7:8', 'a:b'],
      ...['1:2:3:4:5:6:7:8:9', '1::2::3', ':::', '[::1]', '::1/64', 'fe80::1%eth0', 'fe80::1%', '::1%lo:0'],
    ];
    expect(names.map(ipVersion)).toEqual(names.map(isIP));
  });
});
