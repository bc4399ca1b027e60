"""LLM extraction shared by the graph-building memories (GraphRAG-lite, CAM w/ FM, HippoRAG):
text units (``chunks``), entity and relationship extraction with gleaning (``entities``), reply
parsing and the failure log (``parsing``), and the prompts' one home (``prompts``)."""
