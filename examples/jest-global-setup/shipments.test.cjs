const { accountForThisFile } = require('./account.cjs');

let account;
beforeAll(async () => {
  account = await accountForThisFile('shipments.test.cjs');
});

const place = {
  name: 'Ada',
  address1: '417 Montgomery St',
  city: 'San Francisco',
  state: 'CA',
  zip: '94104',
};
const parcel = { weight: 1200, length: 30, width: 20, height: 10 };

test('this file sees its own shipments only, whatever other files create', async () => {
  for (const reference of ['order-1', 'order-2', 'order-3']) {
    const { error } = await account.api.POST('/shipments', {
      body: {
        from: { ...place, country: 'US' },
        to: { ...place, address1: '350 5th Ave', city: 'New York', state: 'NY', zip: '10118', country: 'US' },
        parcel,
        reference,
      },
    });
    if (error) throw new Error(error.error.message);
  }
  const { data } = await account.api.GET('/shipments');
  expect(data.meta.total).toBe(3);
  expect(data.data.map((shipment) => shipment.reference)).toEqual(['order-3', 'order-2', 'order-1']);
});
