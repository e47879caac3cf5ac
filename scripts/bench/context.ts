/**
 * What every section of the benchmark is given: the workspace, the scale of this run, the builds
 * under test, and where it writes its figures.
 */
import type { Contender, SessionClass } from "./contenders.ts";
import type { Workspace } from "./setup.ts";

/** One run's figures, by dotted name (`seq.cxagent.mean_us`); the report reads them by name. */
export type Figures = Record<string, number>;

export interface Build {
  /** The contender's name in the figures: "cxagent", or "base" for a build given with --baseline. */
  name: string;
  Session: SessionClass;
}

export interface Context {
  ws: Workspace;
  quick: boolean;
  /** Interleaved rounds within one run (the run's figure is their median). */
  rounds: number;
  builds: Build[];
  /** A/A check of the method (--aa): the "spin off" contenders run as built, so every spin ratio should be 1. */
  aa: boolean;
  /** This run's per-round samples, by the figure's name (written to --json only). */
  samples: Record<string, number[]>;
  log(text: string): void;
}

/** A named contender opened for a section, and closed by it. */
export interface Named {
  name: string;
  open(): Promise<Contender>;
}

/** cxagent contenders of every build: as it ships, and with the host's spin turned off. */
export function cxagentVariants(ctx: Context): { name: string; Session: SessionClass; env: Record<string, string> }[] {
  const asBuilt: Record<string, string> = {};
  return ctx.builds.flatMap((b) => [
    { name: b.name, Session: b.Session, env: asBuilt },
    { name: `${b.name}-spin0`, Session: b.Session, env: ctx.aa ? asBuilt : { CXAGENT_HOST_SPIN_US: "0" } },
  ]);
}

/** Scales a count down in quick mode. */
export const scaled = (ctx: Context, full: number, quick: number) => (ctx.quick ? quick : full);
