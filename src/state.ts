import { AccountStore } from './accounts/store.js';
import type { Config } from './config.js';
import type { Db } from './db/database.js';
import { EventStore } from './events/store.js';
import { ShipmentStore } from './shipments/store.js';

/** Everything the domain code works on: the database, its stores and the settings. */
export interface State {
  db: Db;
  config: Config;
  accounts: AccountStore;
  shipments: ShipmentStore;
  events: EventStore;
}

export function createState(db: Db, config: Config): State {
  return {
    db,
    config,
    accounts: new AccountStore(db),
    shipments: new ShipmentStore(db),
    events: new EventStore(db),
  };
}

/** Who is acting and when: the account, and the instant its clock read for this request. */
export interface Actor {
  accountId: string;
  now: number;
}
