/**
 * The CLI's words for what to do next. The library describes a next step as data (errors.ts
 * NextStep); only here does it become a command line, with the flags this CLI has.
 */
import type { CxError, NextStep } from "../errors.ts";

/** How the user runs this CLI: the name a hint's commands start with. */
export function selfCommand(): string {
  return "cxagent";
}

/** A word for the shell: quoted when it holds anything the shell would read. */
export function shellWord(word: string): string {
  return /^[A-Za-z0-9_./:@%+=,-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

export function wordNextStep(next: NextStep, hint: string | undefined): string {
  const cx = selfCommand();
  switch (next.do) {
    case "approve": {
      const ref = shellWord(next.ref);
      return `review it with '${cx} describe ${ref}', then approve it: '${cx} approve ${ref}' on a terminal, or '${cx} approve ${ref} --hash ${next.hash}'`;
    }
    case "load-once":
      return `load it for this run only with --once (it still needs approval), or set enabled: true in config.json`;
    case "allow-call":
      return `there was no terminal to ask on; pass --allow to allow this one call`;
    case "raise-timeout":
      return `the native call runs on and its late answer will be discarded; give a longer --timeout than ${next.ms} ms if it needs more time`;
    case "see-output":
      return `${hint ? `${hint}; ` : ""}run again with --verbose to see everything the plugin wrote`;
    case "restart":
      return `stuck calls cannot be interrupted; wait for them, or run the command again (a new run starts a fresh plugin host)`;
    case "choose-folder": {
      const flag = next.which === "state" ? "--state-dir" : next.which === "config" ? "--config-dir" : "--cwd";
      return next.which === "project" ? `give ${flag} an existing folder` : `check that ${next.path} exists and is writable, or choose another folder with ${flag}`;
    }
    case "list-plugins":
      return `${hint ? `${hint}; ` : ""}see ${cx} list`;
    case "report-bug":
      return `this is a bug in cxagent; run again with --verbose and report the output`;
  }
}

/** The hint the CLI shows for an error: its next step in CLI words, else the library's words. */
export function cliHint(error: CxError): string | undefined {
  return error.next ? wordNextStep(error.next, error.hint) : error.hint;
}
