// The package's `shipping-sandbox/client` entry. A placeholder so the build and the export map work;
// the typed client (`createClient`, the webhook payload types, `verifySignature`) replaces it.
export {};
