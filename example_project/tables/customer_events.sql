-- One activity feed: orders placed and pages clicked.
SELECT customer_id, 'order' AS kind, CAST(order_id AS STRING) AS detail, ordered_at AS event_at
FROM orders
UNION ALL
SELECT customer_id, 'click' AS kind, page AS detail, clicked_at AS event_at
FROM page_clicks
