import os, json, httpx, time
def test_explore():
    u = os.environ["CHAPERONE_TEST_URL"]
    c = httpx.Client(base_url=u, timeout=90)
    out = {}
    def run(path, body):
        j = c.post(path, json=body).json()
        while True:
            j = c.get(f"/v1/jobs/{j['id']}", headers={"Prefer": "wait=60"}).json()
            if j["status"] in ("succeeded","failed","canceled"): break
        r = c.get(f"/v1/jobs/{j['id']}/results").json()
        return j, r
    out["predict"] = run("/v1/predictions", {"model":"boltz2","sequence":"MKTAYIAKQRQISFVKSHFSRQ","params":{"diffusion_samples":2}})
    out["predict_targets"] = run("/v1/predictions", {"model":"boltz2","targets":[{"name":"a","content":">A|protein\nMKTAYIAKQRQ\n"},{"name":"skipme","content":">A|protein\nMKTAYIAKQRQ\n"}]})
    out["design"] = run("/v1/designs", {"protocol":"protein-anything","spec":"entities:\n  - protein: {id: B, sequence: 20..30}\n", "params":{"num_designs":3,"budget":2}})
    out["embed"] = run("/v1/embeddings", {"model":"esmc-300m","sequences":["MKV",{"id":"x","sequence":"MKTAYI"}]})
    out["embedpq"] = run("/v1/embeddings", {"model":"esmc-300m","sequences":["MKV",{"id":"x","sequence":"MKTAYI"}],"params":{"format":"parquet"}})
    out["models"] = c.get("/v1/models").json()
    out["health"] = c.get("/v1/health").json()
    json.dump(out, open("/tmp/pyc/explore.json","w"), indent=1)
