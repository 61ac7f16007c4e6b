import json,glob,sys,re,collections
out=sys.argv[1]
def load(p):
    t=open(p).read(); return json.loads(t[t.index("{"):])
def dev(p):
    b=list(map(int,open(p+".before").read().split())); a=list(map(int,open(p+".after").read().split()))
    reads=a[0]-b[0]; ticks=a[3]-b[3]
    return reads, ticks/max(reads,1)*1000
res=collections.defaultdict(list)
for p in sorted(glob.glob(out+"/*.json")):
    name=p.split("/")[-1][:-5]
    who,e,d,r=re.match(r"(rs|fio)-(.*)-d(\d+)-r(\d+)",name).groups()
    reads,lat=dev(p[:-5])
    if who=="rs":
        row=load(p)["results"][0]; iops=row["ops_per_sec"]; p50=row["latency_ns_p50"]/1e3; cpu=(row["cpu_user_s"]+row["cpu_sys_s"])/row["ops"]*1e6; ok=row["verified"]
    else:
        j=load(p)["jobs"][0]; io=j["read"]; iops=io["iops"]; p50=io["clat_ns"]["percentile"]["50.000000"]/1e3; cpu=(j["usr_cpu"]+j["sys_cpu"])/100*io["runtime"]/1e3/io["total_ios"]*1e6; ok=True
    res[(int(d),who+"-"+e)].append((int(r),iops,p50,lat,cpu,ok))
for k in sorted(res):
    print(k," ".join(f"r{r}:{i/1e3:.1f}k p50 {p:.0f}us dev {l:.0f}us cpu {c:.2f}{'' if ok else 'X'}" for r,i,p,l,c,ok in sorted(res[k])))
