#!/usr/bin/env python3
import json,sys
# Merges results documents of the same study into one, renumbering runs so each keeps its own.
out=sys.argv[1]; docs=sys.argv[2:]
merged=None; offset=0
for path in docs:
    d=json.load(open(path))
    top=max([r['run'] for r in d['results']] or [0])
    for r in d['results']:
        r['run']+=offset
    if merged is None:
        merged=d
    else:
        merged['results']+=d['results']
    offset+=top
merged['notes']=merged.get('notes',[])+['merged from '+', '.join(docs)+' (runs renumbered in that order)']
json.dump(merged,open(out,'w'),indent=2)
