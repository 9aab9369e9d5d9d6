#!/bin/sh
# Installed by TestHostileRepository (workspace/git) as every hook, the
# fsmonitor, a filter driver, the signing program, the pager and the editor
# of a repository: if agent-lsp's own git calls ever run it, it leaves a mark.
echo "ran: $0 $*" >> "@MARKER@"
cat
exit 0
