// The structure viewer: Mol*'s prebuilt viewer, served by chaperone from the pinned npm
// tarball (see web/molstar.go) and loaded only when a structure is first shown.

export const MOLSTAR_VERSION = "5.11.0";

// pLDDT bands as AlphaFold colours them; each colour holds up to its upper bound.
export const PLDDT_BANDS = [
  { label: "Very low (< 50)", colour: 0xff7d45, upTo: 0.5 },
  { label: "Low (50–70)", colour: 0xffdb13, upTo: 0.7 },
  { label: "Confident (70–90)", colour: 0x65cbf3, upTo: 0.9 },
  { label: "Very high (> 90)", colour: 0x0053d6, upTo: 1 },
];

let loading;

function loadMolstar() {
  loading ??= new Promise((resolve, reject) => {
    const base = `/web/molstar/${MOLSTAR_VERSION}/`;
    const css = document.createElement("link");
    css.rel = "stylesheet"; css.href = base + "molstar.css";
    document.head.append(css);
    const script = document.createElement("script");
    script.src = base + "molstar.js";
    script.onload = () => resolve(window.molstar);
    script.onerror = () => { loading = undefined; reject(new Error("the Mol* viewer could not be loaded from this server")); };
    document.head.append(script);
  });
  return loading;
}

// Viewer shows one structure at a time in element, coloured by pLDDT from its B-factors.
export class Viewer {
  constructor(element) { this.element = element; }

  async show(text, format) {
    const molstar = await loadMolstar();
    this.viewer ??= await molstar.Viewer.create(this.element, {
      layoutIsExpanded: false, layoutShowControls: false, layoutShowRemoteState: false,
      layoutShowSequence: true, layoutShowLog: false, layoutShowLeftPanel: false,
      viewportShowExpand: true, viewportShowSelectionMode: false, viewportShowAnimation: false,
      collapseLeftPanel: true, disabledExtensions: ["volseg", "mvs", "dnatco-ntcs"],
    });
    const plugin = this.viewer.plugin;
    await plugin.clear();
    await this.viewer.loadStructureFromData(text, format);
    const top = bFactorMax(text, format) > 1 ? 100 : 1;
    const colorParams = { domain: [0, top], list: { kind: "set", colors: PLDDT_BANDS.map(b => [b.colour, b.upTo]) } };
    for (const s of plugin.managers.structure.hierarchy.current.structures) {
      await plugin.managers.structure.component.updateRepresentationsTheme(s.components, { color: "uncertainty", colorParams });
    }
  }
}

// bFactorMax reads the largest B-factor of the first atoms, to tell a 0–100 pLDDT scale
// from a 0–1 one.
export function bFactorMax(text, format) {
  const lines = text.split("\n");
  let max = 0, seen = 0;
  if (format === "pdb") {
    for (const l of lines) {
      if ((l.startsWith("ATOM") || l.startsWith("HETATM")) && seen++ < 500) max = Math.max(max, parseFloat(l.slice(60, 66)) || 0);
    }
    return max;
  }
  const columns = [];
  let column = -1;
  for (const l of lines) {
    if (l.startsWith("_atom_site.")) { columns.push(l.trim()); column = columns.indexOf("_atom_site.B_iso_or_equiv"); continue; }
    if (column >= 0 && /^(ATOM|HETATM)\s/.test(l) && seen++ < 500) max = Math.max(max, parseFloat(l.trim().split(/\s+/)[column]) || 0);
  }
  return max;
}
