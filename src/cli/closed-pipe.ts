/**
 * Output whose reader has gone (`shipping-sandbox serve --help | head -1`, a pager closed early) ends
 * the command quietly with status 0, as the shell's SIGPIPE ends other programs. Node ignores SIGPIPE
 * and reports the closed pipe as an `EPIPE` error on the stream instead, which, unhandled, would end
 * the process with a stack trace. Any other error on the stream is not this one's to hide.
 *
 * A running server writes its log through its logger, which stops writing on a closed pipe and lets the
 * server go on; only its banner goes through `process.stdout`.
 */
export function endQuietlyWhenOutputCloses(
  streams: NodeJS.WriteStream[] = [process.stdout, process.stderr],
  exit: (status: number) => void = (status) => process.exit(status),
): void {
  for (const stream of streams) {
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EPIPE') throw error;
      exit(0);
    });
  }
}
