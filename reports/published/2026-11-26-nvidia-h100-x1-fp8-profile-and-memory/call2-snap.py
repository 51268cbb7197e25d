import pickle, gzip, sys
s=pickle.load(gzip.open(sys.argv[1]))
tr=[e for dev in s['device_traces'] for e in dev]
def where(e, n=4):
    fr=[f for f in e['frames'] if ('harness' in f['filename'] or 'gemmconf' in f['filename'] or 'backend' in f['filename'] or '<' in f['filename'])]
    return ' <- '.join(f"{f['filename'].split('/')[-1]}:{f['line']}:{f['name']}" for f in fr[:n])
live={}; cur=0
for e in tr:
    if e['size'] < 2**28: 
        if e['action']=='alloc': live[e['addr']]=e; cur+=e['size']
        elif e['action']=='free_completed' and e['addr'] in live: cur-=live.pop(e['addr'])['size']
        continue
    if e['action'] in ('alloc','free_requested'):
        print(e['action'], round(e['size']/2**30,2), where(e, 5))
    if e['action']=='alloc': live[e['addr']]=e; cur+=e['size']
    elif e['action']=='free_completed' and e['addr'] in live: cur-=live.pop(e['addr'])['size']
