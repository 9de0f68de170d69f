# -G moves the data into the query; -u is always hidden
curl -G -u ann:s3cret -k https://api.example:8443/search \
  --data-urlencode 'q=red shoes' -d page=2 -d api_key=KEY123 \
  -H 'X-Request-Id: 42'
