"""Runs BoltzGen's own filtering step (task/filter/filter.py, Filter) on made-up designs of
which none passes its filters, for the real-package tier.

The designs' metrics are those Filter reads (load_dataframe, filter_df, sort_df:
filter.py:352-556), every one with a backbone refolding RMSD of 9 Å, over the 2.5 Å
threshold. Filter ranks by (filters passed, metric) and keeps `budget` designs
(filter.py:480-630): the final set is never empty. The PDF summary (prepare_visualization,
make_visualization) is left out: it plots and writes nothing the engine reads.

usage: python filter.py WORKDIR NUM_DESIGNS BUDGET
"""

import pathlib
import sys

import pandas as pd

from boltzgen.task.filter.filter import Filter

CIF = """data_{name}
loop_
_atom_site.group_PDB
_atom_site.label_atom_id
_atom_site.label_comp_id
_atom_site.label_asym_id
_atom_site.label_seq_id
_atom_site.Cartn_x
_atom_site.Cartn_y
_atom_site.Cartn_z
ATOM CA GLY A 1 0.0 0.0 0.0
"""


def main():
    work, n, budget = pathlib.Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    designs = work / "intermediate_designs_inverse_folded"
    (designs / "refold_cif").mkdir(parents=True, exist_ok=True)
    letters = "ACDEFGHIKLMNPQRSTVWY"
    rows = []
    for i in range(n):
        name = f"spec_{i}"
        sequence = "".join(letters[(i * 7 + k * 3) % 20] for k in range(12))
        for folder in (designs, designs / "refold_cif"):
            (folder / f"{name}.cif").write_text(CIF.format(name=name))
        rows.append({
            "id": name, "designed_sequence": sequence, "designed_chain_sequence": sequence,
            "num_design": 12, "file_name": f"{name}.cif",
            "bb_rmsd": 9.0, "bb_rmsd_design": 9.0, "designfolding-bb_rmsd": 9.0,
            "min_design_to_target_pae": 5.0 + i, "min_interaction_pae": 5.0 + i,
            "design_to_target_iptm": 0.8 - 0.01 * i, "design_ptm": 0.7, "plip_hbonds_refolded": 2,
            "plip_saltbridge_refolded": 1, "delta_sasa_refolded": 900.0,
            "CYS_fraction": 0.0, "ALA_fraction": 0.1, "GLY_fraction": 0.1, "GLU_fraction": 0.1,
            "LEU_fraction": 0.1, "VAL_fraction": 0.1,
        })
    pd.DataFrame(rows).to_csv(designs / "aggregate_metrics_analyze.csv", index=False)
    pd.DataFrame([{"id": r["id"], "sequence": r["designed_sequence"]} for r in rows]).to_pickle(
        designs / "ca_coords_sequences.pkl.gz")
    f = Filter(design_dir=str(designs), outdir=str(work), budget=budget, top_budget=min(10, n))
    f.load_dataframe()
    f.reset_outdir()
    f.filter_df()
    f.absolute_metrics()
    f.sort_df()
    f.optimize_diversity()
    f.write_outdir()


if __name__ == "__main__":
    main()
