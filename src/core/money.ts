/** The contract's Money: `{ "amount": "12.40", "currency": "USD" }`, two decimals always. */
export interface Money {
  amount: string;
  currency: string;
}

/** Formats an integer number of cents as the contract's Money. */
export function money(cents: number, currency: string): Money {
  return { amount: (cents / 100).toFixed(2), currency };
}
