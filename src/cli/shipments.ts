import { Argument, type Command } from 'commander';
import { TRACKING_STATUSES } from '../scenarios/vocabulary.js';
import { controlAction, parseLimit, segment } from './control.js';
import {
  formatScenarioStarted,
  formatScenarios,
  formatShipments,
  formatTracking,
  type ScenarioList,
  type ScenarioStarted,
  type ShipmentList,
  type Tracking,
} from './format.js';
import { asDefaultSubcommand } from './suggest.js';

/** `shipments` and `scenarios`: find a shipment, force its tracking status, play it a scenario. */
export function addShipmentCommands(program: Command): void {
  const shipments = program
    .command('shipments')
    .description(
      'list (the default); advance <shipment-id> <status> forces its tracking; scenario <shipment-id> <name> plays one',
    );

  controlAction(
    asDefaultSubcommand(shipments.command('list', { isDefault: true }))
      .description('list shipments, newest first, with their tracking numbers')
      .option('--status <status>', 'only shipments in this status (created, label_generated, in_transit, …)')
      .option('--limit <n>', 'how many, up to 100', parseLimit, 20),
    async ({ api, out }, { options }) => {
      const query = new URLSearchParams({ limit: String(options.limit) });
      if (options.status !== undefined) query.set('status', String(options.status));
      // The sandbox's own list, not GET /v1/shipments: looking counts nowhere against the account.
      out.answer(await api.get<ShipmentList>(`/_sandbox/shipments?${query}`), formatShipments);
    },
  );

  controlAction(
    shipments
      .command('advance')
      .description(
        "force a shipment's tracking to a status, playing every step on the way (webhooks included)",
      )
      .argument('<shipment-id>', 'a shipment with a label (shp_…)')
      .addArgument(new Argument('<status>', 'the tracking status to reach').choices(TRACKING_STATUSES)),
    async ({ api, out }, { args: [id, status] }) =>
      out.answer(
        await api.post<Tracking>(`/_sandbox/shipments/${segment(id)}/advance`, { status }),
        formatTracking,
      ),
  );

  controlAction(
    shipments
      .command('scenario')
      .description("replace a shipment's tracking scenario from now on (see `shipping-sandbox scenarios`)")
      .argument('<shipment-id>', 'a shipment with a label (shp_…)')
      .argument('<name>', 'the scenario, such as exception_then_delivered'),
    async ({ api, out }, { args: [id, name] }) =>
      out.answer(
        await api.post<ScenarioStarted>(`/_sandbox/shipments/${segment(id)}/scenario`, { name }),
        formatScenarioStarted,
      ),
  );

  controlAction(
    program
      .command('scenarios')
      .description('list the tracking scenarios a shipment can play (built-in and --scenarios-dir)'),
    async ({ api, out }) => out.answer(await api.get<ScenarioList>('/_sandbox/scenarios'), formatScenarios),
  );
}
