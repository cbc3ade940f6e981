// The origin app as a Worker, for the service-binding tests.
import { createOrigin } from "./app.mjs";

const handle = createOrigin("service");
export default { fetch: (request) => handle(request) };
