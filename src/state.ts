import type { Logger } from 'pino';
import { AccountStore } from './accounts/store.js';
import { Scheduler } from './clock/scheduler.js';
import type { Config } from './config.js';
import type { Db } from './db/database.js';
import { EventStore } from './events/store.js';
import { LabelFiles } from './labels/label-files.js';
import { UrlSigner } from './labels/signed-url.js';
import { LabelStore } from './labels/store.js';
import { ShipmentStore } from './shipments/store.js';

/** Everything the domain code works on: the database, its stores and the settings. */
export interface State {
  db: Db;
  config: Config;
  accounts: AccountStore;
  shipments: ShipmentStore;
  events: EventStore;
  labels: LabelStore;
  labelFiles: LabelFiles;
  urlSigner: UrlSigner;
  scheduler: Scheduler;
  logger: Logger;
  /** The real wall clock that account clocks are derived from; tests replace it. */
  realNow: () => number;
}

export function createState(db: Db, config: Config, logger: Logger, realNow: () => number = Date.now): State {
  const accounts = new AccountStore(db);
  return {
    db,
    config,
    logger,
    realNow,
    accounts,
    scheduler: new Scheduler(db, accounts, logger, realNow),
    shipments: new ShipmentStore(db),
    events: new EventStore(db),
    labels: new LabelStore(db),
    labelFiles: new LabelFiles(),
    urlSigner: new UrlSigner(db),
  };
}

/** Who is acting and when: the account, and the instant its clock read for this request. */
export interface Actor {
  accountId: string;
  now: number;
}
