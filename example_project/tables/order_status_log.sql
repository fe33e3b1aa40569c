-- An audit trail of order statuses: a custom incremental table. Each refresh appends the orders
-- inserted or updated since the last one (CHANGES() of orders), with the status they got.
REFRESH USING (
  INSERT INTO SELF
  SELECT o.order_id, o.status, o.METADATA$ISUPDATE AS was_update
  FROM orders CHANGES(INFORMATION => DEFAULT) AS o
  WHERE o.METADATA$ACTION = 'INSERT'
)
