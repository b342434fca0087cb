import type { Command } from 'commander';
import { controlAction, parseDuration, parsePositiveNumber } from './control.js';
import { type AdvancedClock, type Clock, formatAdvancedClock, formatClock } from './format.js';
import { asDefaultSubcommand } from './suggest.js';

/** `clock`: read the account's clock, move it, freeze it, set its speed. */
export function addClockCommands(program: Command): void {
  const clock = program
    .command('clock')
    .description(
      "the account's clock: show (the default), advance <duration> | --to <instant>, freeze, unfreeze, speed <factor>",
    );

  controlAction(
    asDefaultSubcommand(clock.command('show', { isDefault: true })).description(
      'print the clock: its time, speed, and whether it is frozen',
    ),
    async ({ api, out }) => out.answer(await api.get<Clock>('/_sandbox/clock'), formatClock),
  );

  controlAction(
    clock
      .command('advance')
      .description('move the clock forward, running every step and webhook retry that falls due on the way')
      .argument('[duration]', 'how far: seconds, or 90s, 5m, 2h, 3d', parseDuration)
      .option('--to <instant>', 'move it to this timestamp instead (2026-11-22T08:00:00Z)')
      .addHelpText(
        'after',
        '\nExamples:\n  shipping-sandbox clock advance 2h\n  shipping-sandbox clock advance --to 2026-12-01T09:00:00Z\n',
      ),
    async ({ api, out }, { args: [by], options, command }) => {
      const to = options.to as string | undefined;
      if ((by === undefined) === (to === undefined))
        command.error('error: give a duration or --to <instant> (one of them)', { exitCode: 2 });
      const body = to === undefined ? { by } : { to };
      out.answer(await api.post<AdvancedClock>('/_sandbox/clock/advance', body), formatAdvancedClock);
    },
  );

  controlAction(
    clock.command('freeze').description('stop the clock: nothing falls due until it moves again'),
    async ({ api, out }) =>
      out.answer(await api.post<Clock>('/_sandbox/clock', { frozen: true }), formatClock),
  );

  controlAction(
    clock.command('unfreeze').description('let the clock run again, from where it stopped'),
    async ({ api, out }) =>
      out.answer(await api.post<Clock>('/_sandbox/clock', { frozen: false }), formatClock),
  );

  controlAction(
    clock
      .command('speed')
      .description('set how fast the clock runs (1 = real time, 3600 = an hour a second)')
      .argument('<factor>', 'a number greater than 0', parsePositiveNumber),
    async ({ api, out }, { args: [speed] }) =>
      out.answer(await api.post<Clock>('/_sandbox/clock', { speed }), formatClock),
  );
}
