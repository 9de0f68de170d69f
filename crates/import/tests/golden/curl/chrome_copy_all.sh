curl 'https://shop.example/api/session' \
  -H 'accept: application/json, text/plain, */*' \
  -H 'accept-language: en-GB,en;q=0.9' \
  -H 'cookie: theme=dark; sessionid=abc123secret' \
  -H 'user-agent: Mozilla/5.0 (X11; Linux x86_64)' \
  --compressed ;
curl 'https://shop.example/api/cart/items?currency=EUR' \
  -H 'accept: application/json' \
  -H 'authorization: Bearer eyJhbGciOiJIUzI1NiJ9.e30.sig' \
  -H 'content-type: application/json' \
  -H 'cookie: theme=dark; sessionid=abc123secret' \
  --data-raw $'{"sku":"A-1","qty":2,"gift":true,"note":"it\'s for Zo\u00eb\\nwith ${love}"}' \
  --compressed ;
curl 'https://cdn.example/img/logo.png' \
  -H 'referer: https://shop.example/' \
  --compressed
