#!/usr/bin/env python3
"""Where a wasm's code bytes are: each function body attributed by the name section to a crate (or a meshplan module),
with the raw bytes and the gzip -9 size of each group's bodies compressed together. Needs a wasm that kept its names
(see docs/web.md, "Where the bytes are"). Usage: python3 scripts/wasm-size.py NAMED.wasm [ROWS]"""
import sys, zlib, re, collections
b=open(sys.argv[1],'rb').read()
def leb(b,i):
    r=s=0
    while True:
        x=b[i]; i+=1; r|=(x&0x7f)<<s; s+=7
        if x<0x80: return r,i
def name(b,i):
    n,i=leb(b,i); return b[i:i+n].decode('utf8','replace'), i+n
i=8; nimp=0; bodies=[]; names={}
while i<len(b):
    sid=b[i]; i+=1; n,i=leb(b,i); end=i+n
    if sid==2:
        c,j=leb(b,i)
        for _ in range(c):
            _,j=name(b,j); _,j=name(b,j); k=b[j]; j+=1
            if k==0: _,j=leb(b,j); nimp+=1
            elif k==1: j+=1; f,j=leb(b,j); _,j=leb(b,j); 
            elif k==2: f,j=leb(b,j); _,j=leb(b,j)
            elif k==3: j+=2
    elif sid==10:
        c,j=leb(b,i)
        for _ in range(c):
            sz,j=leb(b,j); bodies.append(b[j:j+sz]); j+=sz
    elif sid==0:
        nm,j=name(b,i)
        if nm=='name':
            while j<end:
                sub=b[j]; j+=1; sl,j=leb(b,j); se=j+sl
                if sub==1:
                    c,k=leb(b,j)
                    for _ in range(c):
                        idx,k=leb(b,k); s,k=name(b,k); names[idx]=s
                j=se
    i=end
def group(n):
    m=re.search(r'meshplan_core::([a-z_]+)',n)
    if m: return 'core::'+m.group(1)
    m=re.search(r'meshplan_web::([a-z_]+)(::([a-z_]+))?',n)
    if m: return 'web::'+m.group(1)+('::'+m.group(3) if m.group(1) in ('panels','state','ui') and m.group(3) else '')
    m=re.findall(r'([a-z_][a-z0-9_]*)(?:\[[0-9a-f]+\])?::',n)
    k=m[0] if m else '(other)'
    if k in ('core','alloc','std'):
        k='std:'+('fmt' if '::fmt' in n else 'other')
    return k
g=collections.defaultdict(list)
for idx,body in enumerate(bodies):
    g[group(names.get(idx+nimp,'?'))].append(body)
rows=[(k,sum(map(len,v)),len(zlib.compress(b''.join(v),9))) for k,v in g.items()]
tot=sum(r[2] for r in rows)
print('code bodies raw',sum(r[1] for r in rows),'sum of group gz',tot)
by=collections.Counter()
for k,r,z in rows: by[k.split('::')[0] if k.startswith(('core::','web::')) else k]+=z
print('by crate (gz):'); [print(' ',v,k) for k,v in by.most_common(14)]
print('by module (gz):'); [print(' ',z,r,k) for k,r,z in sorted(rows,key=lambda x:-x[2])[:int(sys.argv[2]) if len(sys.argv)>2 else 40]]
