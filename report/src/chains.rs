//! The distinct callchains of a log, each held once: a tree from the
//! outermost caller down, whose nodes are (caller's node, pc), so chains
//! that share their callers share those nodes; a chain is the id of its
//! leaf's node. pcs are interned too, which keeps a node's key in 8 bytes.
//! A log of N samples over K distinct chains holds K counts and the nodes
//! of those K chains, never N of anything.

use rustc_hash::FxHashMap;

/// The tree's root: above every chain's outermost caller.
pub(crate) const ROOT: u32 = 0;

#[derive(Debug)]
pub(crate) struct ChainTree {
    /// Per node, `caller << 32 | pc id` (node 0, the root, has none).
    nodes: Vec<u64>,
    /// A node's key → its id.
    index: FxHashMap<u64, u32>,
    /// Distinct pcs, and each one's id.
    pcs: Vec<u64>,
    pc_ids: FxHashMap<u64, u32>,
}

impl Default for ChainTree {
    fn default() -> ChainTree {
        ChainTree {
            nodes: vec![0],
            index: FxHashMap::default(),
            pcs: Vec::new(),
            pc_ids: FxHashMap::default(),
        }
    }
}

impl ChainTree {
    /// The node of `pcs` (leaf first), added with its callers when new.
    pub(crate) fn intern(&mut self, pcs: &[u64]) -> u32 {
        let mut node = ROOT;
        for &pc in pcs.iter().rev() {
            let pc_id = match self.pc_ids.get(&pc) {
                Some(&id) => id,
                None => {
                    let id = self.pcs.len() as u32;
                    self.pcs.push(pc);
                    self.pc_ids.insert(pc, id);
                    id
                }
            };
            let key = u64::from(node) << 32 | u64::from(pc_id);
            node = match self.index.get(&key) {
                Some(&id) => id,
                None => {
                    let id = self.nodes.len() as u32;
                    self.nodes.push(key);
                    self.index.insert(key, id);
                    id
                }
            };
        }
        node
    }

    /// The pcs of the chain ending at `node`, leaf first.
    pub(crate) fn walk(&self, mut node: u32) -> impl Iterator<Item = u64> + '_ {
        std::iter::from_fn(move || {
            if node == ROOT {
                return None;
            }
            let key = self.nodes[node as usize];
            node = (key >> 32) as u32;
            Some(self.pcs[(key & 0xffff_ffff) as usize])
        })
    }

    /// The pcs of the chain ending at `node`, leaf first, into `out`.
    pub(crate) fn chain(&self, mut node: u32, out: &mut Vec<u64>) {
        out.clear();
        while node != ROOT {
            let key = self.nodes[node as usize];
            out.push(self.pcs[(key & 0xffff_ffff) as usize]);
            node = (key >> 32) as u32;
        }
    }

    /// Nodes held, the root aside: the distinct (caller chain, pc) pairs.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.nodes.len() - 1
    }

    /// Drops the lookup tables once no chain is added: walking
    /// [`ChainTree::chain`] needs only the nodes and pcs.
    pub(crate) fn freeze(&mut self) {
        self.index = FxHashMap::default();
        self.pc_ids = FxHashMap::default();
        // Grown by doubling, they may hold up to twice the room they use
        // while the names of every pc are made.
        self.nodes.shrink_to_fit();
        self.pcs.shrink_to_fit();
    }
}
