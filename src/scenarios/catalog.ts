import { invalidField } from '../core/errors.js';
import type { Scenario } from './files.js';

/** The scenarios loaded at start: the built-in ones, and the user's (`--scenarios-dir`). */
export class ScenarioCatalog {
  constructor(private readonly byName: ReadonlyMap<string, Scenario>) {}

  /** The scenario called `name`, or `422 invalid_field` naming `field` and what is available. */
  find(name: string, field = 'name'): Scenario {
    const scenario = this.byName.get(name);
    if (!scenario) {
      throw invalidField(
        field,
        `No scenario '${name}'. Available: ${[...this.byName.keys()].sort().join(', ')}.`,
      );
    }
    return scenario;
  }

  /**
   * The scenario a new label plays when its account's default is `name`. The default may name a
   * scenario that is gone (a `--scenarios-dir` removed before a restart); then `standard` plays,
   * rather than failing the label.
   */
  forNewLabel(name: string): Scenario {
    const scenario = this.byName.get(name) ?? this.byName.get('standard');
    if (!scenario) throw new Error('the built-in standard scenario is missing');
    return scenario;
  }

  get(name: string): Scenario | undefined {
    return this.byName.get(name);
  }

  all(): Scenario[] {
    return [...this.byName.values()];
  }

  /** The map itself, for the magic tracking numbers' timelines. */
  get map(): ReadonlyMap<string, Scenario> {
    return this.byName;
  }
}
