/**
 * The one terminal prompt: a question on stderr, answered with a single key. Both prompts use the
 * same keys for the same answers: y yes (allow once), a always, n no (deny). Enter takes the
 * default; Ctrl-D and Escape take the safe answer; Ctrl-C interrupts (E_INTERRUPTED, exit 130, as
 * git, npm and gh do), having allowed or approved nothing; any other key is answered on the screen
 * (which keys answer) and the question asked again. Never used without a terminal (a prompt with
 * nobody to answer it would hang), so callers check isInteractive() first.
 */
import { CxError } from "../errors.ts";
import { inert } from "../inert.ts";
import { err, isTTY } from "./_stdio.ts";


export interface Choice<T extends string> {
  key: string;
  label: string;
  value: T;
}

export function isInteractive(): boolean {
  return isTTY(0) && isTTY(2);
}

export async function choose<T extends string>(question: string, choices: Choice<T>[], fallback: T): Promise<T> {
  const keys = choices.map((c) => (c.value === fallback ? c.key.toUpperCase() : c.key.toLowerCase())).join("/");
  const stdin = process.stdin;
  const wasRaw = stdin.isRaw;
  // Raw mode before the question: a key pressed the moment it shows is read, not echoed.
  stdin.setRawMode(true);
  stdin.resume();
  err(`${question} [${keys}] `);
  try {
    const answer = await new Promise<T>((resolve, reject) => {
      const onData = (data: Buffer) => {
        let value: T | undefined;
        let key = "";
        // Keys typed ahead arrive together: the first one that answers wins, others are ignored.
        for (key of data.toString("utf8")) {
          if (key === "\x03") {
            stdin.off("data", onData);
            err("^C\n");
            reject(new CxError("E_INTERRUPTED", "interrupted at the prompt: nothing was allowed or approved"));
            return;
          }
          if (key === "\r" || key === "\n" || key === "\x04" || key === "\x1b") value = fallback;
          else value = choices.find((c) => c.key.toLowerCase() === key.toLowerCase())?.value;
          if (value !== undefined) break;
        }
        if (value === undefined) {
          // Said on the screen, so a key that does nothing is never a mystery; then asked again.
          const allowed = choices.map((c) => c.key.toLowerCase());
          const list = allowed.length > 1 ? `${allowed.slice(0, -1).join(", ")} or ${allowed.at(-1)}` : allowed[0];
          err(`\n'${inert(key)}' answers nothing here: press ${list} (Enter: ${choices.find((c) => c.value === fallback)?.label ?? fallback})\n${question} [${keys}] `);
          return;
        }
        stdin.off("data", onData);
        const label = choices.find((c) => c.value === value)?.label ?? value;
        err(`${label}\n`);
        resolve(value);
      };
      stdin.on("data", onData);
    });
    return answer;
  } finally {
    stdin.setRawMode(wasRaw);
    stdin.pause();
  }
}
