import { defineCommand } from "citty";
import { commandMeta } from "../_meta.ts";
import { CxError } from "../../errors.ts";
import { didYouMean } from "../../suggest.ts";
import type { CommandResult } from "../_output.ts";

/**
 * Shell completion scripts. Each asks the CLI itself for candidates (`cxagent __complete -- WORD…`,
 * the words typed so far and the one being completed), so commands, flags, plugin names, tool and
 * command names are always those of this build and this folder; where it has none to offer, the
 * shell completes file names (a plugin is also named by its path).
 */
const SCRIPTS = {
  bash: `# cxagent completion for bash. Load it with:  source <(cxagent completions bash)
# or keep it:  cxagent completions bash > ~/.local/share/bash-completion/completions/cxagent
_cxagent() {
  local IFS=$'\\n'
  COMPREPLY=($(cxagent __complete -- "\${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null))
}
complete -o default -F _cxagent cxagent
`,
  zsh: `#compdef cxagent
# cxagent completion for zsh. Load it (after compinit) with:  source <(cxagent completions zsh)
# or keep it as _cxagent in a folder of your fpath.
_cxagent() {
  local -a candidates
  candidates=("\${(@f)$(cxagent __complete -- "\${(@)words[2,CURRENT]}" 2>/dev/null)}")
  if [[ -n "\${candidates[1]}" ]]; then
    compadd -a candidates
  else
    _files
  fi
}
compdef _cxagent cxagent
`,
  fish: `# cxagent completion for fish. Load it with:  cxagent completions fish | source
# or keep it:  cxagent completions fish > ~/.config/fish/completions/cxagent.fish
function __cxagent_complete
    set -l words (commandline -opc) (commandline -ct)
    cxagent __complete -- $words[2..-1] 2>/dev/null
end
complete -c cxagent -a '(__cxagent_complete)'
`,
} as const;

export const SHELLS = Object.keys(SCRIPTS) as (keyof typeof SCRIPTS)[];

export default defineCommand({
  meta: commandMeta({ name: "completions", description: "Print a completion script for bash, zsh or fish: commands, flags, plugin and tool names", summary: "Print a shell completion script (bash, zsh or fish)" }),
  args: {
    shell: { type: "positional", description: `The shell: ${SHELLS.join(", ")}`, required: true },
  },
  run({ args }): CommandResult {
    const shell = args.shell;
    if (!(shell in SCRIPTS)) {
      throw new CxError("E_USAGE", `cxagent has completions for ${SHELLS.join(", ")}, not '${shell}'${didYouMean(shell, SHELLS)}`);
    }
    const script = SCRIPTS[shell as keyof typeof SCRIPTS];
    return { json: { shell, script }, text: script };
  },
});
