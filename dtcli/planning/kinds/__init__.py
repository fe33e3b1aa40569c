"""The two kinds of dynamic table, behind one interface (base.TableKind): a query table
(query.py) and a custom incremental table, REFRESH USING (custom.py). registry.py finds a
table's kind, once; everything that differs between the two is asked of it."""
