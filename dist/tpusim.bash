# bash completion for tpusim. The commands and each command's options are
# read from the installed program's own --help, so they never drift from it.
_tpusim() {
  local cur prev words cword
  _init_completion 2>/dev/null || { cur=${COMP_WORDS[COMP_CWORD]}; prev=${COMP_WORDS[COMP_CWORD-1]}; cword=$COMP_CWORD; words=("${COMP_WORDS[@]}"); }
  local exe=${words[0]}
  if [ "$cword" -eq 1 ]; then
    local cmds
    cmds=$("$exe" --help 2>/dev/null | sed -n '/^commands:/,/^$/s/^  \([a-z][a-z-]*\) .*/\1/p')
    COMPREPLY=($(compgen -W "$cmds --help --version" -- "$cur"))
    return
  fi
  # values from the program's own tables (tpusim --values OPTION), files where a file may stand instead
  case $prev in
    --precision|--level|--dataflow|--host|--dtype-policy|--backend|--emit)
      COMPREPLY=($(compgen -W "$("$exe" --values "${prev#--}" 2>/dev/null)" -- "$cur")); return ;;
    --chip|--model)
      COMPREPLY=($(compgen -W "$("$exe" --values "${prev#--}" 2>/dev/null)" -- "$cur") \
                 $(compgen -f -X '!*.json' -- "$cur") $(compgen -d -- "$cur")); return ;;
    --data)
      COMPREPLY=($(compgen -W "$("$exe" --values data 2>/dev/null)" -- "$cur") $(compgen -d -- "$cur")); return ;;
    --out|--csv|--trace|--checkpoint|--png|--program|--pipeline|--npy|--topology)
      COMPREPLY=($(compgen -f -- "$cur")); return ;;
  esac
  if [[ $cur == -* ]]; then
    local opts
    opts=$("$exe" "${words[1]}" --help 2>/dev/null | grep -o -- '--[a-z][a-z0-9-]*' | sort -u)
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
  else
    COMPREPLY=($(compgen -f -- "$cur"))
  fi
}
complete -F _tpusim tpusim
