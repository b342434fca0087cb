/**
 * The sandbox's settings (settings.ts, their values in values.ts) and how the command line and the
 * environment set them (command-line.ts). This is the one entry: only the command line and the
 * wiring read the config (.dependency-cruiser.cjs); modules are given the settings they use.
 */
export { ConfigError } from '../core/errors.js';
export {
  ClashingSettings,
  type CommandLine,
  helpText,
  parseCommandLine,
  testConfig,
} from './command-line.js';
export {
  type Config,
  listensOnLoopback,
  offersDefaultAccount,
  SETTINGS,
  webhookTargetsOf,
} from './settings.js';
