#!/bin/sh
# The example's tools. $1 names the tool; stdin holds {"tool": "...", "input": {...}}.
# An answer is a JSON string, or {"output": "...", "is_error": true} for an error the model sees.
read -r request
case "$1" in
  count)
    # The "text" argument, unescaped enough for an example: \" \\ \n \t (a real tool would use jq or Python).
    text=$(printf '%s' "$request" | sed -n 's/.*"text":"\(\([^"\\]\|\\.\)*\)".*/\1/p')
    if [ -z "$text" ] && ! printf '%s' "$request" | grep -q '"text":""'; then
      printf '{"output":"the text argument is missing or not a string","is_error":true}\n'
      exit 0
    fi
    text=$(printf '%s' "$text" | sed 's/\\n/\n/g; s/\\t/\t/g; s/\\"/"/g; s/\\\\/\\/g')
    words=$(printf '%s' "$text" | wc -w | tr -d ' ')
    lines=$(printf '%s\n' "$text" | wc -l | tr -d ' ')
    chars=$(printf '%s' "$text" | wc -m | tr -d ' ')
    printf '"%s words, %s lines, %s characters"\n' "$words" "$lines" "$chars"
    ;;
  host)
    printf '"%s"\n' "$(uname -srm)"
    ;;
  *)
    echo "no tool '$1'" >&2
    exit 2
    ;;
esac
