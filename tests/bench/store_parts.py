#!/usr/bin/env python3
# Where a kept store's bytes go, by payload part (docs/BENCHMARKS.md, "Storage"):
#   tests/bench/store_parts.py DIR
# Format 7 segments (version 5 payloads, docs/FORMAT.md) only. Each chain's
# frame is decompressed with the zstd command; each part (a table, a column of
# the thread table, the entries' stacks and values by kind) of the chain's
# records is then compressed on its own, the chain's records one after the
# other, at zstd level 9 with the writer's largest window and tables. A
# part's share of the sum is its share of the store's bytes per on-CPU sample.
#   tests/bench/store_parts.py --summaries DIR
# The records of DIR's summary files (tests/bench/summarise.c): their bytes,
# the share of tables in each, and what zstd level 9, or all records of a
# file as one frame, would make of them.
#   tests/bench/store_parts.py --ceiling DIR
# What no re-encoding of the same records is likely to beat: each chain's
# records (decompressed) at zstd levels 9, 19 and 22 and xz -9e, one stream
# a chain as the writer compresses them; and the stack table if a new
# stack could share its first frames with any stack its chain holds (a
# reference to it), not only with the previous new stack of its record.
import struct,sys,glob,subprocess
def U(b,o):
    x=0;sh=0
    while True:
        c=b[o];o+=1;x|=(c&0x7f)<<sh;sh+=7
        if not c&0x80: return x,o
def zl(data,lvl=9,extra=[]):
    return len(subprocess.run(['zstd','-q','-c','-%d'%lvl,'--no-check','--zstd=wlog=21,hlog=19,clog=19']+extra,input=data,capture_output=True).stdout)
def sections(b):
    # the parts of a version 5 payload: (name, start, end)
    o=0; out=[]; mark=lambda n,s,e: out.append((n,s,e))
    ver,o=U(b,o)
    key_ref,o=U(b,o)
    for _ in range(3): _,o=U(b,o)
    mark('header',0,o); s=o
    n,o=U(b,o)
    for _ in range(n):
        l,o=U(b,o); o+=l
    mark('strings',s,o); s=o
    _,o=U(b,o); _,o=U(b,o)  # start, dur
    for _ in range(3): _,o=U(b,o)  # host kernel event
    _,o=U(b,o) # freq
    nc,o=U(b,o)
    for _ in range(2*nc): _,o=U(b,o)
    mark('meta+counters',s,o); s=o
    nf,o=U(b,o)
    cols=['frame kind','frame module','frame name','frame offset']
    for c in cols:
        s=o
        for _ in range(nf): _,o=U(b,o)
        mark(c,s,o)
    s=o
    ns,o=U(b,o)
    for _ in range(ns):
        _,o=U(b,o); m,o=U(b,o)
        for _ in range(m): _,o=U(b,o)
    mark('stacks',s,o); s=o
    n,o=U(b,o); _,o=U(b,o); nt,o=U(b,o)
    mark('sample counts',s,o)
    for c in ['pid','tid','comm','thread','cgroup']:
        s=o
        for _ in range(nt): _,o=U(b,o)
        mark(c,s,o)
    s=o; cnt=[0,0,0]
    for i in range(3*nt):
        v,o=U(b,o); cnt[i//nt]+=v
    mark('entries by kind',s,o)
    for col in ('stack','value'):
        for k,kn in enumerate(('cpu','offcpu','runq')):
            s=o
            for _ in range(cnt[k]): _,o=U(b,o)
            mark('entry %s %s'%(col,kn),s,o)
    assert o==len(b),(o,len(b))
    return out
TABLES=('strings','frame kind','frame module','frame name','frame offset','stacks')
def summaries(d):
    for f in sorted(glob.glob(d+'/sum-*.pfd')):
        b=open(f,'rb').read(); o=0; raws=[]
        seg=sum(len(open(x,'rb').read()) for x in glob.glob(d+'/seg-'+f.split('/sum-')[1]))
        print('%s: %d bytes, its segment %d (%.0f%%)'%(f.split('/')[-1],len(b),seg,100*len(b)/max(seg,1)))
        while o+64<=len(b):
            mag,ver,lvl,hl,_,flags,comp,raw=struct.unpack_from('<IBBBBIII',b,o)
            r=subprocess.run(['zstd','-d','-c','-q'],input=b[o+64:o+64+comp],capture_output=True).stdout
            secs=sections(r)
            tab=sum(zl(r[s0:e],3) for n,s0,e in secs if n in TABLES)
            smp=zl(b''.join(r[s0:e] for n,s0,e in secs if n not in TABLES),3)
            print('  flags %#04x: stored %d, raw %d; tables %.0f%% of it (parts at level 3); level 9 %d'%(
                flags,comp,raw,100*tab/max(tab+smp,1),zl(r,9)))
            raws.append(r); o+=64+comp
        for l in (3,9):
            print('  level %d: records apart %d, one frame %d'%(l,sum(zl(r,l) for r in raws),zl(b''.join(raws),l)))
def putu(o,v):
    while True:
        c=v&0x7f; v>>=7
        if not v: o.append(c); return
        o.append(c|0x80)
def zz(v): return v<<1 if v>=0 else ((-v)<<1)-1
def lcp(a,b):
    n=0
    while n<len(a) and n<len(b) and a[n]==b[n]: n+=1
    return n
def new_stacks(raw,s):
    # a record's new stacks as payload frame ids, root first (docs/FORMAT.md)
    ns,o=U(raw,s); prev=[]; out=[]
    for _ in range(ns):
        sh,o=U(raw,o); m,o=U(raw,o); cur=list(prev[:sh])
        for j in range(sh,sh+m):
            v,o=U(raw,o)
            if j==sh and j<len(prev): f=prev[j]+1+v
            elif j: f=cur[j-1]+((v>>1)^-(v&1))
            else: f=v
            cur.append(f)
        out.append(cur); prev=cur
    return out
def put_steps(o,st,base,sh):
    for j in range(sh,len(st)):
        if j==sh and j<len(base) and st[j]>base[j]: putu(o,st[j]-base[j]-1)
        elif j: putu(o,zz(st[j]-st[j-1]))
        else: putu(o,st[j])
def chain_raws(d):
    for f in sorted(glob.glob(d+'/seg-*.pfd')):
        b=open(f,'rb').read(); o=0; chains=[]
        while o+64<=len(b):
            mag,ver,lvl,hl,_,flags,comp,raw=struct.unpack_from('<IBBBBIII',b,o)
            if not flags&2: chains.append([])
            chains[-1].append((b[o+64:o+64+comp],raw)); o+=64+comp
        for ch in chains:
            out=subprocess.run(['zstd','-d','-c','-q'],input=b''.join(p for p,_ in ch),capture_output=True).stdout
            q=0; recs=[]
            for p,r in ch: recs.append(out[q:q+r]); q+=r
            yield sum(64+len(p) for p,_ in ch),recs
def ceiling(d):
    import bisect
    tot={}; whole=0
    for stored,recs in chain_raws(d):
        whole+=stored; allraw=b''.join(recs)
        for name,cmd in (('zstd -9',['zstd','-9']),('zstd -19',['zstd','-19']),('zstd --ultra -22',['zstd','--ultra','-22']),('xz -9e',['xz','-9e'])):
            n=len(subprocess.run(cmd+['-q','-c'],input=allraw,capture_output=True).stdout)
            tot[name]=tot.get(name,0)+n
        known=[]; cur=b''; ref=b''
        for raw in recs:
            s,e=[(s,e) for n,s,e in sections(raw) if n=='stacks'][0]
            cur+=raw[s:e]; new=new_stacks(raw,s)
            order=sorted(range(len(known)),key=lambda i:known[i]); keys=[known[i] for i in order]
            o=bytearray(); putu(o,len(new)); prev=[]
            for st in new:
                # 0: the previous new stack as now; else 1 + the chain stack shared with
                lp=lcp(st,prev); k=bisect.bisect_left(keys,st); best=-1; bl=0
                for kk in (k-1,k):
                    if 0<=kk<len(keys) and lcp(keys[kk],st)>bl: bl=lcp(keys[kk],st); best=order[kk]
                if bl>lp: putu(o,1+best); base=known[best]; sh=bl
                else: putu(o,0); base=prev; sh=lp
                putu(o,sh); putu(o,len(st)-sh); put_steps(o,st,base,sh); prev=st
            known+=new; ref+=bytes(o)
        tot['stacks as written']=tot.get('stacks as written',0)+zl(cur)
        tot['stacks, any chain stack shared']=tot.get('stacks, any chain stack shared',0)+zl(ref)
    print('store bytes %d'%whole)
    for n,v in tot.items(): print('  %-32s %9d  %+.1f%%'%(n,v,100*(v/(tot['zstd -9'] if n.startswith(('zstd','xz')) else tot['stacks as written'])-1)))
if sys.argv[1]=='--ceiling':
    ceiling(sys.argv[2]); sys.exit(0)
if sys.argv[1]=='--summaries':
    summaries(sys.argv[2]); sys.exit(0)
tot={}; rawtot={}; whole=0; cpu=0
for f in sorted(glob.glob(sys.argv[1]+'/seg-*.pfd')):
    b=open(f,'rb').read(); o=0; chains=[]
    while o+64<=len(b):
        mag,ver,lvl,hl,_,flags,comp,raw=struct.unpack_from('<IBBBBIII',b,o)
        samples,=struct.unpack_from('<Q',b,o+40)
        if not flags&2: chains.append([])
        chains[-1].append((b[o+64:o+64+comp],raw,samples)); o+=64+comp; whole+=64+comp; cpu+=samples
    for ch in chains:
        out=subprocess.run(['zstd','-d','-c','-q'],input=b''.join(p for p,_,_ in ch),capture_output=True).stdout
        assert len(out)>=sum(r for _,r,_ in ch),(len(out),sum(r for _,r,_ in ch))
        q=0; per={}
        for p,r,_ in ch:
            raw=out[q:q+r]; q+=r
            for n,s,e in sections(raw):
                per[n]=per.get(n,b'')+raw[s:e]
        for n,v in per.items():
            rawtot[n]=rawtot.get(n,0)+len(v)
            tot[n]=tot.get(n,0)+zl(v)
print('store bytes %d, on-CPU samples %d, %.2f B per sample'%(whole,cpu,whole/cpu))
S=sum(tot.values())
for n,v in sorted(tot.items(),key=lambda x:-x[1]):
    print('  %-18s raw %8d  alone, chained, zstd 9 %7d  %5.1f%%  %.2f B per on-CPU sample (of the store)'%(n,rawtot[n],v,100*v/S,v/S*whole/cpu))
print('sum of parts %d; the chains as written %d'%(S,whole))
